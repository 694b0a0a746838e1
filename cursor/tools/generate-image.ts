// GenerateImage (docs/protocol/cursor-tools.md §5.9): card generate_image_tool_call; an approval query
// generate_image_request_query{args, tool_call_id} → generate_image_request_response. A rejection ends the call with
// the typed error result; an approval lets the gateway ask the configured image service (a side effect the engine
// performs), and the image is written into the workspace by an ordinary hidden Exec write_args{file_bytes} →
// write_result, because the gateway never touches the user's disk itself.
import { createHash } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import {
  GenerateImageArgsSchema,
  GenerateImageRequestQuerySchema,
  GenerateImageResultSchema,
  WriteArgsSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { GenerateImageArgs, GenerateImageResult, WriteResult } from "../../proto/gen/agent/v1/agent_pb.js";
import { optionalEnum, optionalString, optionalStringArray, parseOrInvalid, requiredString } from "./args.js";
import type { DriverStep, ToolDriver, ToolInvocation } from "./types.js";
import { completed, toolCall, unexpectedMessage, wireName } from "./wire.js";

const NAME = "GenerateImage";
const ASPECT_RATIOS = ["1:1", "4:3", "3:4", "16:9", "9:16"] as const;

type Parsed = { args: GenerateImageArgs; aspectRatio?: (typeof ASPECT_RATIOS)[number] };
type State = Parsed & { path?: string; imageData?: string };

function parseArgs(call: ToolInvocation): Parsed {
  const aspectRatio = optionalEnum(call.args, "aspect_ratio", ASPECT_RATIOS);
  const args = create(GenerateImageArgsSchema, {
    description: requiredString(call.args, "description"),
    filePath: optionalString(call.args, "filename"),
    referenceImagePaths: optionalStringArray(call.args, "reference_image_paths") ?? [],
  });
  return aspectRatio ? { args, aspectRatio } : { args };
}

function card(callId: string, args?: GenerateImageArgs, result?: GenerateImageResult) {
  return toolCall(callId, { case: "generateImageToolCall", value: { args, result } });
}

const errorResult = (error: string) =>
  create(GenerateImageResultSchema, { result: { case: "error", value: { error } } });
const protocolError = (message: string): DriverStep<State> => ({
  kind: "protocol_error",
  message: `${NAME}: ${message}`,
});

const EXTENSIONS = new Map([
  ["image/png", "png"],
  ["image/jpeg", "jpg"],
  ["image/webp", "webp"],
  ["image/gif", "gif"],
]);

/** The model's filename, or one derived from the call id, so a replayed call writes the same file. */
function imagePath(call: ToolInvocation, args: GenerateImageArgs, mimeType: string): string {
  if (args.filePath) return args.filePath;
  const id = createHash("sha256").update(call.callId).digest("hex").slice(0, 8);
  return `generated-image-${id}.${EXTENSIONS.get(mimeType) ?? "png"}`;
}

function writeFailure(r: WriteResult["result"]): string | undefined {
  switch (r.case) {
    case "permissionDenied":
      return `permission denied${r.value.error ? ` (${r.value.error})` : ""}`;
    case "noSpace":
      return "no space left on the device";
    case "error":
      return r.value.error;
    case "rejected":
      return `the user rejected the write${r.value.reason ? `: ${r.value.reason}` : ""}`;
    default:
      return undefined;
  }
}

export const generateImageDriver: ToolDriver<State> = {
  name: NAME,
  placeholder: (callId) => card(callId),
  started(call) {
    const p = parseOrInvalid(NAME, () => parseArgs(call));
    return "invalid" in p ? p : { toolCall: card(call.callId, p.ok.args) };
  },
  begin(call): DriverStep<State> {
    const p = parseOrInvalid(NAME, () => parseArgs(call));
    if ("invalid" in p) return { kind: "protocol_error", message: p.invalid };
    const value = create(GenerateImageRequestQuerySchema, { args: p.ok.args, toolCallId: call.callId });
    return { kind: "query", query: { case: "generateImageRequestQuery", value }, state: p.ok };
  },
  onInteractionResponse(call, state, answer) {
    if (answer.case !== "generateImageRequestResponse") {
      const got = answer.case ? wireName(answer.case) : "nothing";
      return protocolError(`expected generate_image_request_response, got ${got}`);
    }
    const r = answer.value.result;
    if (r.case === "approved") {
      const request = { kind: "generateImage" as const, prompt: state.args.description };
      return {
        kind: "service",
        request: state.aspectRatio ? { ...request, aspectRatio: state.aspectRatio } : request,
        state,
      };
    }
    if (r.case === "rejected") {
      const text = `The user rejected the image generation${r.value.reason ? `: ${r.value.reason}` : "."}`;
      return completed(state, text, true, card(call.callId, state.args, errorResult(text)));
    }
    return protocolError("generate_image_request_response has no result set");
  },
  onServiceResult(call, state, outcome) {
    if (outcome.kind === "error")
      return completed(state, outcome.message, true, card(call.callId, state.args, errorResult(outcome.message)));
    if (outcome.kind !== "generateImage") return protocolError(`the image service answered ${outcome.kind}`);
    const path = imagePath(call, state.args, outcome.mimeType);
    const imageData = Buffer.from(outcome.data).toString("base64");
    const request = create(WriteArgsSchema, { path, fileBytes: outcome.data, toolCallId: call.callId });
    return { kind: "exec", request: { case: "writeArgs", value: request }, state: { ...state, path, imageData } };
  },
  onExecMessage(call, state, message) {
    if (message.case !== "writeResult") return unexpectedMessage(NAME, "writeResult", message, state);
    const r = message.value.result;
    if (r.case === undefined) return protocolError("write_result has no result set");
    const path = state.path ?? "";
    if (r.case === "success") {
      const value = { filePath: r.value.path || path, imageData: state.imageData ?? "" };
      const result = create(GenerateImageResultSchema, { result: { case: "success", value } });
      const text = `Generated the image and saved it to ${value.filePath}.`;
      return completed({ args: state.args }, text, false, card(call.callId, state.args, result));
    }
    const text = `The image was generated but could not be saved to ${path}: ${writeFailure(r)}`;
    return completed({ args: state.args }, text, true, card(call.callId, state.args, errorResult(text)));
  },
};
