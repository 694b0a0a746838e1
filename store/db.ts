import knex, { type Knex } from "knex";
import ClientSqlite3 from "knex/lib/dialects/sqlite3/index.js";
import TransactionSqlite from "knex/lib/dialects/sqlite3/execution/sqlite-transaction.js";
import { migrationSource } from "./migrations/index.js";

// knex's sqlite3 dialect hard-codes `BEGIN;` and has no option for IMMEDIATE, so we subclass its client and
// transaction (typed in knex-internals.d.ts). knex ships no `exports` map, which keeps these deep paths reachable;
// re-check them when upgrading knex. Imported statically, so the build bundles them with the same copy of knex.

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

class SqliteImmediateClient extends ClientSqlite3 {
  transaction(container: unknown, config: unknown, outerTx: unknown) {
    return new ImmediateTransaction(this, container, config, outerTx);
  }
}

interface SqliteConnection {
  exec(sql: string, cb: (err: Error | null) => void): void;
}

// docs/protocol/cursor-run.md §6.2–§6.3 runtime configuration; these are per connection, so they run on every
// connection the pool opens.
const CONNECTION_PRAGMAS =
  "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 5000;";

export interface DbOptions {
  /** Receives every SQL statement knex sends, including BEGIN/COMMIT (diagnostics and tests), and whether it runs
   * inside a transaction (a write outside one is its own autocommit). */
  onQuery?: (sql: string, inTransaction: boolean) => void;
}

/** Opens the SQLite file and brings its schema to the latest migration. */
export async function openDb(filename: string, opts: DbOptions = {}): Promise<Knex> {
  const db = knex({
    client: SqliteImmediateClient as unknown as typeof knex.Client,
    connection: { filename },
    useNullAsDefault: true,
    // One connection (knex's sqlite3 default, stated here because the store relies on it): statements from
    // concurrent callers queue in the pool instead of contending for the file lock.
    pool: {
      min: 1,
      max: 1,
      afterCreate: (conn: SqliteConnection, done: (err: Error | null, conn: SqliteConnection) => void) =>
        conn.exec(CONNECTION_PRAGMAS, (err) => done(err, conn)),
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

/** sqlite3 binds Buffers as BLOBs; this views the caller's bytes without copying. */
export function toBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Hands out plain Uint8Array views so callers compare ids and data without Buffer-specific behaviour. */
export function toBytes(buf: Buffer): Uint8Array {
  return new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength);
}

// Multi-row statements are 3–4× faster than single-row ones (measured with this driver); 100 rows of up to 10 columns stay
// far below SQLite's bound-parameter limit.
const ROWS_PER_STATEMENT = 100;

export function batches<T>(rows: readonly T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) out.push(rows.slice(i, i + ROWS_PER_STATEMENT));
  return out;
}
