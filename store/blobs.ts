import type { Knex } from "knex";
import { type BlobEdge, type BlobPut, blobId } from "../cursor/blob-graph.js";
import { batches, toBuffer, toBytes, type WriteTx, type Writer } from "./db.js";

export class BlobIntegrityError extends Error {
  constructor(
    readonly expectedId: string,
    readonly actualId: string,
  ) {
    super(`blob integrity: id ${expectedId} but SHA-256(data) is ${actualId}`);
    this.name = "BlobIntegrityError";
  }
}

/** docs/protocol/cursor-run.md §6.2: every write checks SHA-256(data) == id; called before any transaction so a bad
 * batch writes nothing. */
export function verifyBlobs(blobs: readonly BlobPut[]): void {
  for (const b of blobs) {
    const actual = Buffer.from(blobId(b.data));
    const expected = toBuffer(b.id);
    if (!actual.equals(expected)) throw new BlobIntegrityError(expected.toString("hex"), actual.toString("hex"));
  }
}

// Content-addressed, so an id already present holds the same bytes: the conflict is the idempotent put. Writing a
// blob again renews created_at: garbage collection's retention counts from the latest write, so a run that reuses
// an old unreachable blob keeps it until its checkpoint makes it reachable.
const UPSERT_BLOB = `INSERT INTO blobs (id, kind, data, size_bytes, created_at) VALUES (?, ?, ?, ?, ?)
  ON CONFLICT (id) DO UPDATE SET created_at = excluded.created_at`;

// A parent is immutable, so a (parent, kind, ordinal) already present is the same reference.
const INSERT_EDGE = `INSERT INTO blob_edges (parent_id, child_id, kind, ordinal) VALUES (?, ?, ?, ?)
  ON CONFLICT (parent_id, kind, ordinal) DO NOTHING`;

export function insertBlobs(tx: WriteTx, blobs: readonly BlobPut[], now: number): void {
  for (const b of blobs) tx.run(UPSERT_BLOB, toBuffer(b.id), b.kind ?? null, toBuffer(b.data), b.data.byteLength, now);
}

export function insertEdges(tx: WriteTx, edges: readonly BlobEdge[]): void {
  for (const e of edges) tx.run(INSERT_EDGE, toBuffer(e.parent), toBuffer(e.child), e.kind, e.ordinal);
}

export async function getBlob(db: Knex, id: Uint8Array): Promise<Uint8Array | undefined> {
  const row: { data: Buffer } | undefined = await db("blobs").select("data").where("id", toBuffer(id)).first();
  return row && toBytes(row.data);
}

/** docs/protocol/cursor-run.md §6.2 get_many: the blobs in the order asked, undefined where absent; batched queries,
 * not one per id. */
export async function getBlobs(db: Knex, ids: readonly Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
  const found = new Map<string, Uint8Array>();
  for (const batch of batches(ids)) {
    const rows: Array<{ id: Buffer; data: Buffer }> = await db("blobs")
      .select("id", "data")
      .whereIn("id", batch.map(toBuffer));
    for (const r of rows) found.set(r.id.toString("hex"), toBytes(r.data));
  }
  return ids.map((id) => found.get(toBuffer(id).toString("hex")));
}

export async function missingBlobs(db: Knex, ids: readonly Uint8Array[]): Promise<Uint8Array[]> {
  const present = new Set<string>();
  for (const batch of batches(ids)) {
    const rows: Array<{ id: Buffer }> = await db("blobs").select("id").whereIn("id", batch.map(toBuffer));
    for (const r of rows) present.add(r.id.toString("hex"));
  }
  return ids.filter((id) => !present.has(toBuffer(id).toString("hex")));
}

/** docs/protocol/cursor-run.md §6.2 put: verify every hash, then insert the whole batch in one immediate transaction.
 * */
export async function putBlobs(write: Writer, blobs: readonly BlobPut[]): Promise<void> {
  verifyBlobs(blobs);
  if (blobs.length === 0) return;
  const now = Date.now();
  await write((tx) => insertBlobs(tx, blobs, now));
}
