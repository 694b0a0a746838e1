// Client-side helpers for the mode e2e tests: interaction answers for CreatePlan and SwitchMode, and readings of
// what the provider was offered (docs/protocol/cursor-tools.md §5.10, §6).
import { create } from "@bufbuild/protobuf";
import {
  CreatePlanRequestResponseSchema,
  type InteractionResponse,
  SwitchModeRequestResponseSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { RecordedChatRequest } from "./fake-openai.js";

/** The client saved the plan at `planUri`. */
export function planSaved(planUri: string): InteractionResponse["result"] {
  const value = create(CreatePlanRequestResponseSchema, {
    result: { planUri, result: { case: "success", value: {} } },
  });
  return { case: "createPlanRequestResponse", value };
}

/** The user approved (no reason) or rejected (with one) a SwitchMode. */
export function switchAnswer(rejectedBecause?: string): InteractionResponse["result"] {
  const value =
    rejectedBecause === undefined
      ? create(SwitchModeRequestResponseSchema, { result: { case: "approved", value: {} } })
      : create(SwitchModeRequestResponseSchema, { result: { case: "rejected", value: { reason: rejectedBecause } } });
  return { case: "switchModeRequestResponse", value };
}

/** The tool names a Chat Completions request offered, in order. */
export function offeredNames(request: RecordedChatRequest): string[] {
  const tools = (request.body.tools ?? []) as Array<{ function: { name: string } }>;
  return tools.map((t) => t.function.name);
}

/** The system prompt a Chat Completions request carried. */
export function systemPrompt(request: RecordedChatRequest): string {
  const [first] = request.body.messages as Array<{ role: string; content: string }>;
  return first?.role === "system" ? first.content : "";
}
