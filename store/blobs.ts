import { createHash } from "node:crypto";
import type { Knex } from "knex";
import { batches, toBuffer, toBytes } from "./db.js";

/** A blob's own decoded type when known (003 §13.2: `blobs.kind` may be unknown for opaque blobs). */
export const BlobKinds = {
  RootPromptJson: 1, // UTF-8 JSON model message in root_prompt_messages_json[]
  ConversationTurn: 2,
  UserMessage: 3,
  ConversationStep: 4,
  ConversationState: 5, // referenced by UserMessage.conversation_state_blob_id
  Checkpoint: 6, // the ConversationStateStructure a conversation head points at
  RequestContextRules: 7,
  RequestContextSkills: 8,
  RequestContextSubagents: 9,
  RequestContextMcps: 10,
} as const;
/** One of BlobKinds; plain number so kinds read back from rows or the wire need no cast. */
export type BlobKind = number;

/** What a reference means inside its parent (003 §13.2); the decoding context of the child comes from here. */
export const EdgeKinds = {
  CheckpointRootPrompt: 1,
  CheckpointTurn: 2,
  TurnUserMessage: 3,
  TurnStep: 4,
  UserConversationState: 5,
  RequestRules: 6,
  RequestSkills: 7,
  RequestSubagents: 8,
  RequestMcps: 9,
} as const;

export interface BlobPut {
  id: Uint8Array;
  data: Uint8Array;
  kind?: BlobKind;
}

export interface BlobEdge {
  parent: Uint8Array;
  child: Uint8Array;
  /** One of EdgeKinds. */
  kind: number;
  /** Array index inside the parent, e.g. steps[17]. */
  ordinal: number;
}

export class BlobIntegrityError extends Error {
  constructor(
    readonly expectedId: string,
    readonly actualId: string,
  ) {
    super(`blob integrity: id ${expectedId} but SHA-256(data) is ${actualId}`);
    this.name = "BlobIntegrityError";
  }
}

export function blobId(data: Uint8Array): Uint8Array {
  return toBytes(createHash("sha256").update(data).digest());
}

/** 003 §13.4: every write checks SHA-256(data) == id; called before any transaction so a bad batch writes nothing. */
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

/** 003 §13.4 get_many: the blobs in the order asked, undefined where absent; batched queries, not one per id. */
export async function getBlobs(db: Knex, ids: readonly Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
  const found = new Map<string, Uint8Array>();
  for (const batch of batches(ids)) {
    const rows: Array<{ id: Buffer; data: Buffer }> = await db("blobs").select("id", "data").whereIn("id", batch.map(toBuffer));
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

/** 003 §13.4 put: verify every hash, then insert the whole batch in one immediate transaction. */
export async function putBlobs(db: Knex, blobs: readonly BlobPut[]): Promise<void> {
  verifyBlobs(blobs);
  if (blobs.length === 0) return;
  const now = Date.now();
  await db.transaction((trx) => insertBlobs(trx, blobs, now));
}
