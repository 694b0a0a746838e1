// Shared arrange/act helpers for the driver tests: build invocations and client messages the way the wire
// delivers them (every message goes through toBinary/fromBinary, so only encodable values pass).
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ExecClientMessageSchema, ExecServerMessageSchema, ToolCallSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import type { ExecClientMessage, ToolCall } from "../../proto/gen/agent/v1/agent_pb.js";
import type { DriverStep, ExecRequest, ToolCompletion, ToolContext, ToolInvocation } from "../../cursor/tools/types.js";

/** A captured-style call id: it holds a real newline (docs/protocol/cursor-tools.md §2.6). */
export const CALL_ID = "call_7Hq2\nfc_68a1f0_0";

export const ctx: ToolContext = { conversationId: "conv-1", terminalsFolder: "/home/u/.cursor/projects/p/terminals" };

export function invocation(name: string, args: Record<string, unknown>, callId = CALL_ID): ToolInvocation {
  const argumentsJson = JSON.stringify(args);
  return { callId, modelCallId: "mc-1", name, argumentsJson, args: JSON.parse(argumentsJson) };
}

/** A client Exec message as decoded from the wire. */
export function clientMessage(
  message: MessageInitShape<typeof ExecClientMessageSchema>["message"],
): ExecClientMessage["message"] {
  const bytes = toBinary(ExecClientMessageSchema, create(ExecClientMessageSchema, { id: 3, message }));
  return fromBinary(ExecClientMessageSchema, bytes).message;
}

/** Asserts an exec step and returns its request after a wire round trip (proves it encodes). */
export function execOf<S>(step: DriverStep<S>): { request: ExecRequest; state: S } {
  if (step.kind !== "exec") expect.fail(`expected an exec step, got ${JSON.stringify(step.kind)}`);
  const bytes = toBinary(ExecServerMessageSchema, create(ExecServerMessageSchema, { id: 7, message: step.request }));
  return { request: fromBinary(ExecServerMessageSchema, bytes).message, state: step.state };
}

export function completionOf<S>(step: DriverStep<S>): ToolCompletion {
  if (step.kind !== "complete") expect.fail(`expected a complete step, got ${step.kind}: ${JSON.stringify(step)}`);
  // The typed card must survive encoding, or tool_call_completed could not be sent.
  fromBinary(ToolCallSchema, toBinary(ToolCallSchema, step.completion.toolCall));
  return step.completion;
}

export function protocolErrorOf<S>(step: DriverStep<S>): string {
  if (step.kind !== "protocol_error") expect.fail(`expected a protocol_error step, got ${step.kind}`);
  return step.message;
}

type BranchValue<C> = ToolCall["tool"] extends infer B ? (B extends { case: C; value: infer V } ? V : never) : never;

/** Narrows a ToolCall to one branch. */
export function branch<C extends NonNullable<ToolCall["tool"]["case"]>>(call: ToolCall, name: C): BranchValue<C> {
  expect(call.tool.case).to.equal(name);
  return call.tool.value as BranchValue<C>;
}

export function startedCall(result: { toolCall: ToolCall } | { invalid: string }): ToolCall {
  if ("invalid" in result) expect.fail(`expected valid args, got: ${result.invalid}`);
  return result.toolCall;
}
