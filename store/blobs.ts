import type { Knex } from "knex";
import { type BlobEdge, type BlobPut, blobId } from "../cursor/blob-graph.js";
import { batches, toBuffer, toBytes } from "./db.js";

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

/** Content-addressed, so an id already present holds the same bytes: ignoring the conflict is the idempotent put. */
export async function insertBlobs(trx: Knex.Transaction, blobs: readonly BlobPut[], now: number): Promise<void> {
  const rows = blobs.map((b) => ({
    id: toBuffer(b.id),
    kind: b.kind ?? null,
    data: toBuffer(b.data),
    size_bytes: b.data.byteLength,
    created_at: now,
  }));
  // Writing a blob again renews created_at: garbage collection's retention counts from the latest write, so a run
  // that reuses an old unreachable blob keeps it until its checkpoint makes it reachable.
  for (const batch of batches(rows)) await trx("blobs").insert(batch).onConflict("id").merge(["created_at"]);
}

/** A parent is immutable, so a (parent, kind, ordinal) already present is the same reference. */
export async function insertEdges(trx: Knex.Transaction, edges: readonly BlobEdge[]): Promise<void> {
  const rows = edges.map((e) => ({
    parent_id: toBuffer(e.parent),
    child_id: toBuffer(e.child),
    kind: e.kind,
    ordinal: e.ordinal,
  }));
  for (const batch of batches(rows)) {
    await trx("blob_edges").insert(batch).onConflict(["parent_id", "kind", "ordinal"]).ignore();
  }
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
export async function putBlobs(db: Knex, blobs: readonly BlobPut[]): Promise<void> {
  verifyBlobs(blobs);
  if (blobs.length === 0) return;
  const now = Date.now();
  await db.transaction((trx) => insertBlobs(trx, blobs, now));
}
