// Shared pieces of the wire-level transport tests (transport.test.ts): the model id they run against, the frame
// sequences a text-only answer and a Read or Shell round trip produce, the scripted Read turn, helpers that pick one
// RunSSE connection's message frames and compare them byte for byte, and the end-of-test cleanliness check.
import { toBinary } from "@bufbuild/protobuf";
import { expect } from "chai";
import { AgentServerMessageSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { CursorClient, RunHandle } from "../support/cursor-client.js";
import type { StreamedTurn } from "../support/fake-openai.js";
import { assertEndStreamInvariants, type ObservedFrame } from "../support/observed-frames.js";

export const MODEL = "byok-e2e";

export const TEXT_ONLY = [
  "text_delta",
  "token_delta",
  "step_completed",
  ...repeat("kv_set", 6),
  "turn_ended",
  "checkpoint",
  "checkpoint",
  "checkpoint",
  "end:ok",
];
/** A Read round up to the Exec the client must answer. */
export const READ_UNTIL_EXEC = [
  "partial_tool_call",
  "partial_tool_call",
  "token_delta",
  ...repeat("kv_set", 4),
  "checkpoint",
  "tool_call_started",
  "exec:read_args",
];
const READ_AFTER_EXEC = [
  "tool_call_completed",
  ...repeat("kv_set", 4),
  "checkpoint",
  "text_delta",
  "token_delta",
  "step_completed",
  ...repeat("kv_set", 3),
  "turn_ended",
  "checkpoint",
  "checkpoint",
  "checkpoint",
  "end:ok",
];
export const READ_ROUND_TRIP = [...READ_UNTIL_EXEC, ...READ_AFTER_EXEC];
export const SHELL_ROUND_TRIP = [
  "partial_tool_call",
  "partial_tool_call",
  "token_delta",
  ...repeat("kv_set", 4),
  "checkpoint",
  "tool_call_started",
  "exec:shell_stream_args",
  "tool_call_delta",
  ...READ_AFTER_EXEC,
];

function repeat(kind: string, times: number): string[] {
  return Array.from({ length: times }, () => kind);
}

export const readTurn = (callId: string, path: string): StreamedTurn => ({
  toolCalls: [{ id: callId, name: "Read", args: { path } }],
});

export const messageFrames = (frames: readonly ObservedFrame[], connection: number) =>
  frames.filter(
    (f): f is Extract<ObservedFrame, { kind: "message" }> => f.kind === "message" && f.connection === connection,
  );
export const frameBytes = (f: Extract<ObservedFrame, { kind: "message" }>): string =>
  Buffer.from(toBinary(AgentServerMessageSchema, f.message)).toString("hex");

export function expectClean(client: CursorClient, run: RunHandle): void {
  assertEndStreamInvariants(run.frames);
  expect(client.violations()).to.deep.equal([]);
}
