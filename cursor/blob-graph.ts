// The checkpoint blob graph's vocabulary (docs/protocol: blobs are content-addressed, id = SHA-256 of the bytes):
// what a blob decodes as and what an edge means inside its parent. Pure, so machines and the store share it.
import { createHash } from "node:crypto";

/** A blob's own decoded type when known (docs/protocol/cursor-run.md §6.1: `blobs.kind` may be unknown for opaque
 * blobs). */
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
  ConversationPlan: 11, // the checkpoint's current plan (docs/protocol/cursor-run.md §8.9)
  ConversationSummary: 12, // ConversationStateStructure.summary
  ConversationSummaryArchive: 13, // summary_archive, summary_archives[]
  TodoItem: 14, // an entry of the checkpoint's todos[]
} as const;
/** One of BlobKinds; plain number so kinds read back from rows or the wire need no cast. */
export type BlobKind = number;

/** What a reference means inside its parent (docs/protocol/cursor-run.md §6.1); the decoding context of the child comes
 * from here. */
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
  CheckpointPlan: 10,
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

export function blobId(data: Uint8Array): Uint8Array {
  return new Uint8Array(createHash("sha256").update(data).digest());
}

/** A blob id in hex, as maps and the history cache key ids. */
export function hexId(id: Uint8Array): string {
  return Buffer.from(id.buffer, id.byteOffset, id.byteLength).toString("hex");
}

const hexLists = new WeakMap<readonly Uint8Array[], readonly string[]>();

/**
 * A list of blob ids in hex, kept for as long as the list lives: a run keys its checkpoint's roots (hundreds in a
 * long conversation) for the history cache, the blobs it asks for and its checkpoint builder. Id lists are never
 * changed in place (a checkpoint gets a new one), which is what makes the list a key.
 */
export function hexIds(ids: readonly Uint8Array[]): readonly string[] {
  let keys = hexLists.get(ids);
  if (!keys) {
    keys = ids.map(hexId);
    hexLists.set(ids, keys);
  }
  return keys;
}
