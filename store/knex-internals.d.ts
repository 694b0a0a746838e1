// The two knex internals store/db.ts subclasses; knex publishes no types for its dialect modules.
declare module "knex/lib/dialects/better-sqlite3/index.js" {
  import type { Knex } from "knex";
  const ClientBetterSqlite3: new (config: Knex.Config) => object;
  export default ClientBetterSqlite3;
}

declare module "knex/lib/dialects/sqlite3/execution/sqlite-transaction.js" {
  interface TransactionInternals {
    readonly readOnly?: boolean;
    query(conn: unknown, sql: string): Promise<unknown>;
  }
  const TransactionSqlite: new (...args: unknown[]) => TransactionInternals;
  export default TransactionSqlite;
}
