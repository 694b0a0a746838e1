// What the fake Cursor client saw on RunSSE, and the readings tests make of it: a compact kind list for asserting
// exact frame order, the end-of-stream invariants (docs/protocol/cursor-run.md §10, §10.2–§10.6), and a checkpoint's
// blob closure (docs/protocol/cursor-run.md §4.1, §5.2).
import { fromBinary } from "@bufbuild/protobuf";
import { AssertionError } from "chai";
import {
  type AgentServerMessage,
  type ConversationStateStructure,
  ConversationStateStructureSchema,
  ConversationTurnStructureSchema,
  UserMessageSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { ErrorDetails } from "../../proto/gen/aiserver/v1/aiserver_pb.js";

export type RunEnd =
  | { ok: true }
  /** code is a Connect code from the end-stream, or `http_<status>` / `missing_end_stream` / `client_protocol_error`.
   * */
  | { ok: false; code: string; message: string; errorDetails?: ErrorDetails };

export type ObservedFrame =
  | { kind: "message"; message: AgentServerMessage; connection: number; compressed: boolean; at: number }
  | { kind: "end"; end: RunEnd; connection: number; at: number }
  /** The body ended (or failed) without an end-stream frame. */
  | { kind: "eof"; reason: string; connection: number; at: number }
  /** The test dropped the RunSSE response on purpose. */
  | { kind: "disconnect"; connection: number; at: number };

export interface FrameKindOptions {
  /** Heartbeats arrive on a timer, so they are left out unless asked for. */
  heartbeats?: boolean;
  /** Kinds whose consecutive repeats are shown once (e.g. ["text_delta"] when chunking is not under test). */
  collapse?: string[];
}

/** e.g. ["text_delta", "tool_call_started", "exec:read_args", "kv_set", "checkpoint", "turn_ended", "end:ok"]. */
export function frameKinds(frames: readonly ObservedFrame[], opts: FrameKindOptions = {}): string[] {
  const kinds: string[] = [];
  for (const frame of frames) {
    const kind = frameKind(frame);
    if (kind === "heartbeat" && !opts.heartbeats) continue;
    if (opts.collapse?.includes(kind) && kinds[kinds.length - 1] === kind) continue;
    kinds.push(kind);
  }
  return kinds;
}

export function frameKind(frame: ObservedFrame): string {
  switch (frame.kind) {
    case "end":
      return frame.end.ok ? "end:ok" : `end:${frame.end.code}`;
    case "eof":
    case "disconnect":
      return frame.kind;
    case "message":
      return messageKind(frame.message);
  }
}

function messageKind(message: AgentServerMessage): string {
  const m = message.message;
  switch (m.case) {
    case "interactionUpdate":
      return snake(m.value.message.case ?? "empty_interaction_update");
    case "execServerMessage":
      return `exec:${snake(m.value.message.case ?? "empty")}`;
    case "execServerControlMessage":
      return m.value.message.case === "abort" ? "abort" : "exec_control:empty";
    case "conversationCheckpointUpdate":
      return "checkpoint";
    case "kvServerMessage":
      return m.value.message.case === "setBlobArgs"
        ? "kv_set"
        : m.value.message.case === "getBlobArgs"
          ? "kv_get"
          : "kv:empty";
    case "interactionQuery":
      return `query:${snake(m.value.query.case ?? "empty")}`;
    case undefined:
      return "empty_message";
  }
}

const snake = (camel: string): string => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/**
 * The termination invariants every run must satisfy (docs/protocol/cursor-run.md §10.2–§10.5, §10.6;
 * docs/protocol/README.md §6.1–§6.2), checked for each RunSSE connection the test did not drop itself (a reconnect
 * replays the backlog, so each connection must be whole on its own): it ends with exactly one end-stream and nothing
 * after it; success ⇒ exactly one turn_ended, followed only by checkpoints — staged, settled, the settled one repeated
 * — before end:ok; error/cancel ⇒ no turn_ended and no text_delta carrying the error message.
 */
export function assertEndStreamInvariants(frames: readonly ObservedFrame[]): void {
  const connections = [...new Set(frames.map((f) => f.connection))];
  const checked = connections.filter((c) => !frames.some((f) => f.connection === c && f.kind === "disconnect"));
  if (checked.length === 0) throw new AssertionError("no RunSSE connection ran to its end");
  for (const c of checked) assertConnectionEnd(frames.filter((f) => f.connection === c));
}

function assertConnectionEnd(frames: readonly ObservedFrame[]): void {
  const fail = (why: string): never => {
    throw new AssertionError(`${why}\nframes: ${JSON.stringify(frameKinds(frames))}`);
  };
  const ends = frames.filter((f) => f.kind === "end");
  if (ends.length !== 1) fail(`expected exactly one end-stream, saw ${ends.length}`);
  const end = ends[0]!;
  if (frames[frames.length - 1] !== end) fail("the end-stream must be the last frame");

  const body = frames
    .filter((f) => f.kind === "message")
    .map(frameKind)
    .filter((k) => k !== "heartbeat");
  const turnEnded = body.filter((k) => k === "turn_ended").length;
  if (end.end.ok) {
    if (turnEnded !== 1) fail(`success needs exactly one turn_ended, saw ${turnEnded}`);
    const tail = body.slice(body.indexOf("turn_ended") + 1);
    if (tail.length < 3 || tail.some((k) => k !== "checkpoint")) {
      fail("success must end turn_ended → staged checkpoint → settled checkpoint → same settled checkpoint → end:ok");
    }
    const [settled, repeated] = frames
      .filter(isCheckpoint)
      .slice(-2)
      .map((f) => f.message);
    if (!sameCheckpoint(settled!, repeated!)) fail("the repeated final checkpoint must equal the settled one");
    return;
  }
  if (turnEnded !== 0) fail(`a failed or canceled run must not send turn_ended (end: ${end.end.code})`);
  const errorText = end.end.message;
  if (errorText && textDeltas(frames).some((t) => t.includes(errorText)))
    fail(`the error message leaked into a text_delta: ${errorText}`);
}

function isCheckpoint(f: ObservedFrame): f is Extract<ObservedFrame, { kind: "message" }> {
  return f.kind === "message" && f.message.message.case === "conversationCheckpointUpdate";
}

function sameCheckpoint(a: AgentServerMessage, b: AgentServerMessage): boolean {
  return JSON.stringify(a.message.value, bigintSafe) === JSON.stringify(b.message.value, bigintSafe);
}

const bigintSafe = (_: string, v: unknown): unknown =>
  typeof v === "bigint" ? v.toString() : v instanceof Uint8Array ? Buffer.from(v).toString("hex") : v;

/** All text_delta texts, in order. */
export function textDeltas(frames: readonly ObservedFrame[]): string[] {
  return frames.flatMap((f) =>
    f.kind === "message" &&
    f.message.message.case === "interactionUpdate" &&
    f.message.message.value.message.case === "textDelta"
      ? [f.message.message.value.message.value.text]
      : [],
  );
}

export const blobHex = (id: Uint8Array): string => Buffer.from(id).toString("hex");

export interface BlobClosure {
  /** Every blob id (hex) reachable from the checkpoint, roots first. */
  referenced: string[];
  /** Referenced ids whose bytes are not in `blobs`, so their own references could not be followed. */
  missing: string[];
}

/**
 * The blobs a checkpoint depends on: root_prompt_messages_json entries, turns → ConversationTurnStructure →
 * user_message (→ UserMessage.conversation_state_blob_id → that state's own closure) and steps
 * (docs/protocol/cursor-run.md §4.1).
 */
export function blobClosure(
  checkpoint: ConversationStateStructure,
  blobs: ReadonlyMap<string, Uint8Array>,
): BlobClosure {
  const referenced: string[] = [];
  const missing: string[] = [];
  const seen = new Set<string>();
  const visit = (id: Uint8Array, follow?: (bytes: Uint8Array) => void): void => {
    const hex = blobHex(id);
    if (id.byteLength === 0 || seen.has(hex)) return;
    seen.add(hex);
    referenced.push(hex);
    const bytes = blobs.get(hex);
    if (bytes === undefined) missing.push(hex);
    else follow?.(bytes);
  };
  const visitState = (state: ConversationStateStructure): void => {
    for (const root of state.rootPromptMessagesJson) visit(root);
    for (const turn of state.turns) visit(turn, followTurn);
  };
  const followTurn = (bytes: Uint8Array): void => {
    const turn = fromBinary(ConversationTurnStructureSchema, bytes).turn;
    if (turn.case !== "agentConversationTurn") return;
    visit(turn.value.userMessage, (userBytes) => {
      const stateId = fromBinary(UserMessageSchema, userBytes).conversationStateBlobId;
      visit(stateId, (stateBytes) => visitState(fromBinary(ConversationStateStructureSchema, stateBytes)));
    });
    for (const step of turn.value.steps) visit(step);
  };
  visitState(checkpoint);
  return { referenced, missing };
}
