import knex, { type Knex } from "knex";
import ClientBetterSqlite3 from "knex/lib/dialects/better-sqlite3/index.js";
import TransactionSqlite from "knex/lib/dialects/sqlite3/execution/sqlite-transaction.js";
import { migrationSource } from "./migrations/index.js";

// knex's SQLite dialects hard-code `BEGIN;` and have no option for IMMEDIATE, so we subclass its better-sqlite3
// client and the SQLite transaction (typed in knex-internals.d.ts). knex ships no `exports` map, which keeps these
// deep paths reachable; re-check them when upgrading knex. Imported statically, so the build bundles them with the
// same copy of knex.

/**
 * Every write transaction takes the write lock at BEGIN (docs/protocol/cursor-run.md §6.2–§6.3;
 * docs/protocol/cursor-tools.md §3.1): a deferred transaction that reads
 * a sequence number and then writes can hit SQLITE_BUSY(_SNAPSHOT) when another connection wrote in between.
 */
class ImmediateTransaction extends TransactionSqlite {
  begin(conn: unknown) {
    return this.query(conn, this.readOnly ? "BEGIN;" : "BEGIN IMMEDIATE;");
  }
}

class SqliteImmediateClient extends ClientBetterSqlite3 {
  transaction(container: unknown, config: unknown, outerTx: unknown) {
    return new ImmediateTransaction(this, container, config, outerTx);
  }
}

/** What the store uses of a better-sqlite3 connection (the pool's one). */
interface SqliteConnection {
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  readonly inTransaction: boolean;
}

interface SqliteStatement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
}

// docs/protocol/cursor-run.md §6.2–§6.3 runtime configuration; these are per connection, so they run on every
// connection the pool opens.
const CONNECTION_PRAGMAS =
  "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;";

/** Receives every SQL statement sent, including BEGIN/COMMIT (diagnostics and tests), and whether it runs inside a
 * transaction (a write outside one is its own autocommit). */
export type OnQuery = (sql: string, inTransaction: boolean) => void;

/** Opens the SQLite file and brings its schema to the latest migration. */
export async function openDb(filename: string, opts: { onQuery?: OnQuery } = {}): Promise<Knex> {
  const db = knex({
    client: SqliteImmediateClient as unknown as typeof knex.Client,
    connection: { filename },
    useNullAsDefault: true,
    // One connection (knex's SQLite default, stated here because the store relies on it): statements from
    // concurrent callers queue in the pool instead of contending for the file lock, and Writer's transactions
    // queue there with knex's own.
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: SqliteConnection, done: (err: unknown, conn: SqliteConnection) => void) => {
        try {
          conn.exec(CONNECTION_PRAGMAS);
          done(null, conn);
        } catch (err) {
          done(err, conn);
        }
      },
    },
  });
  const onQuery = opts.onQuery;
  if (onQuery) db.on("query", (q: { sql: string; __knexTxId?: string }) => onQuery(q.sql, q.__knexTxId !== undefined));
  try {
    await db.migrate.latest({ migrationSource });
  } catch (err) {
    await db.destroy();
    throw err;
  }
  return db;
}

/** The statements of one write transaction, each run at once on the store's connection. */
export interface WriteTx {
  run(sql: string, ...params: unknown[]): { changes: number };
  get<T>(sql: string, ...params: unknown[]): T | undefined;
  all<T>(sql: string, ...params: unknown[]): T[];
}

/** Runs `work` as one immediate transaction: committed when it returns, rolled back when it throws. */
export type Writer = <T>(work: (tx: WriteTx) => T) => Promise<T>;

/**
 * The store's writes (docs/protocol/cursor-run.md §6.2–§6.3): BEGIN IMMEDIATE, the statements and COMMIT run
 * synchronously, back to back, on the pool's connection, from statements prepared once per connection. Through
 * knex's runner each statement cost a few hundred microseconds of JavaScript (more under load); here a settled
 * round's seven cost tens (docs/performance.md, fix 25). `work` must not await: nothing else can run between BEGIN
 * and COMMIT, which is also why the transaction cannot interleave with another caller's. Waiting for the pool keeps
 * it in line behind knex's queries.
 */
export function writer(db: Knex, onQuery: OnQuery | undefined): Writer {
  // The SQL texts are the store's constants, so the cache is bounded by the code; keyed per connection because a
  // statement belongs to the connection that prepared it.
  const prepared = new WeakMap<SqliteConnection, Map<string, SqliteStatement>>();
  return async (work) => {
    const conn = (await db.client.acquireConnection()) as SqliteConnection;
    try {
      const cache = prepared.get(conn) ?? new Map<string, SqliteStatement>();
      prepared.set(conn, cache);
      const statement = (sql: string, inTransaction = true) => {
        onQuery?.(sql, inTransaction);
        const known = cache.get(sql);
        if (known) return known;
        const s = conn.prepare(sql);
        cache.set(sql, s);
        return s;
      };
      const tx: WriteTx = {
        run: (sql, ...params) => statement(sql).run(...params),
        get: <T>(sql: string, ...params: unknown[]) => statement(sql).get(...params) as T | undefined,
        all: <T>(sql: string, ...params: unknown[]) => statement(sql).all(...params) as T[],
      };
      statement("BEGIN IMMEDIATE;", false).run();
      try {
        const result = work(tx);
        statement("COMMIT;").run();
        return result;
      } catch (err) {
        if (conn.inTransaction) statement("ROLLBACK;").run();
        throw err;
      }
    } finally {
      await db.client.releaseConnection(conn);
    }
  };
}

/** better-sqlite3 binds Buffers as BLOBs; this views the caller's bytes without copying. */
export function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Hands out plain Uint8Array views so callers compare ids and data without Buffer-specific behaviour. */
export function toBytes(buf: Buffer): Uint8Array {
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

// Reads of many ids go 100 per statement: one statement instead of one per id, far below SQLite's bound-parameter
// limit.
const ROWS_PER_STATEMENT = 100;

export function batches<T>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) out.push(rows.slice(i, i + ROWS_PER_STATEMENT));
  return out;
}
