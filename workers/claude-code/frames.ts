// The Claude Code CLI's stream-json frames (docs/protocol/claude-code.md; observed on 2.1.328,
// test/fixtures/claude-code). Stdout frames are read loosely (unknown types and fields are expected and tolerated);
// stdin frames are built here only and validated before they are written, because one bad stdin line kills the CLI
// (fixture i1).
import * as z from "zod";

/** Any stdout frame: a JSON object with a `type`. Everything else is optional and checked where it is read. */
export interface StdoutFrame {
  readonly type: string;
  readonly [field: string]: unknown;
}

export interface ContentBlock {
  readonly type: string;
  readonly text?: string;
  readonly thinking?: string;
  readonly id?: string;
  readonly name?: string;
  readonly input?: unknown;
  readonly tool_use_id?: string;
  readonly content?: unknown;
  readonly is_error?: boolean;
}

/** `assistant` / `user` frames carry an Anthropic message. */
export interface MessageFrame extends StdoutFrame {
  readonly message: {
    readonly id?: string;
    readonly model?: string;
    readonly content: string | readonly ContentBlock[];
  };
  readonly parent_tool_use_id?: string | null;
  readonly is_api_error_message?: boolean;
  readonly isReplay?: boolean;
}

export interface StreamEventFrame extends StdoutFrame {
  readonly event: {
    readonly type: string;
    readonly index?: number;
    readonly message?: { readonly id?: string };
    readonly content_block?: ContentBlock;
    readonly delta?: { readonly type?: string; readonly text?: string; readonly thinking?: string };
  };
  readonly api_message_id?: string;
  readonly parent_tool_use_id?: string | null;
}

export interface ControlRequestFrame extends StdoutFrame {
  readonly request_id: string;
  readonly request: { readonly subtype: string; readonly [field: string]: unknown };
}

export interface ControlResponseFrame extends StdoutFrame {
  readonly response: {
    readonly subtype: "success" | "error";
    readonly request_id: string;
    readonly response?: unknown;
    readonly error?: string;
  };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A parsed stdout line becomes a frame only when it is an object with a string `type`. */
export function asStdoutFrame(value: unknown): StdoutFrame | undefined {
  return isObject(value) && typeof value.type === "string" ? (value as StdoutFrame) : undefined;
}

export function isMessageFrame(frame: StdoutFrame): frame is MessageFrame {
  return isObject(frame.message) && (typeof frame.message.content === "string" || Array.isArray(frame.message.content));
}

export function isStreamEventFrame(frame: StdoutFrame): frame is StreamEventFrame {
  return isObject(frame.event) && typeof frame.event.type === "string";
}

/** Trap 18: the payload sits under `request`; a frame without it or without a request_id cannot be routed. */
export function isControlRequestFrame(frame: StdoutFrame): frame is ControlRequestFrame {
  return typeof frame.request_id === "string" && isObject(frame.request) && typeof frame.request.subtype === "string";
}

/** The CLI puts `request_id` inside `response` (fixtures c1, c2). */
export function isControlResponseFrame(frame: StdoutFrame): frame is ControlResponseFrame {
  return (
    isObject(frame.response) &&
    typeof frame.response.request_id === "string" &&
    typeof frame.response.subtype === "string"
  );
}

// ---- stdin ------------------------------------------------------------------------------------------------------

const UserFrameSchema = z.strictObject({
  type: z.literal("user"),
  message: z.strictObject({ role: z.literal("user"), content: z.string() }),
  parent_tool_use_id: z.null(),
  session_id: z.string(),
  uuid: z.uuid(),
});

const ControlRequestOutSchema = z.strictObject({
  type: z.literal("control_request"),
  request_id: z.string().min(1),
  request: z.looseObject({ subtype: z.string().min(1) }),
});

const ControlResponseOutSchema = z.strictObject({
  type: z.literal("control_response"),
  response: z.union([
    z.strictObject({
      subtype: z.literal("success"),
      request_id: z.string().min(1),
      response: z.record(z.string(), z.unknown()),
    }),
    z.strictObject({ subtype: z.literal("error"), request_id: z.string().min(1), error: z.string() }),
  ]),
});

const StdinFrameSchema = z.union([UserFrameSchema, ControlRequestOutSchema, ControlResponseOutSchema]);
export type StdinFrame = z.infer<typeof StdinFrameSchema>;

/**
 * One stdin line: the frame validated, serialised, with U+2028/U+2029 escaped too (JSON allows them raw, a line
 * reader might not), and a single trailing newline. Throws on a frame the CLI would not accept.
 */
export function encodeStdinLine(frame: StdinFrame): string {
  const checked = StdinFrameSchema.parse(frame);
  return `${JSON.stringify(checked)
    .replace(/\u2028/g, "\\u2028")
    .replace(/\u2029/g, "\\u2029")}\n`;
}

export const stdinFrames = {
  user: (content: string, uuid: string): StdinFrame => ({
    type: "user",
    message: { role: "user", content },
    parent_tool_use_id: null,
    session_id: "",
    uuid,
  }),
  controlRequest: (requestId: string, subtype: string, fields: Record<string, unknown> = {}): StdinFrame => ({
    type: "control_request",
    request_id: requestId,
    request: { ...fields, subtype },
  }),
  success: (requestId: string, response: Record<string, unknown>): StdinFrame => ({
    type: "control_response",
    response: { subtype: "success", request_id: requestId, response },
  }),
  error: (requestId: string, error: string): StdinFrame => ({
    type: "control_response",
    response: { subtype: "error", request_id: requestId, error },
  }),
};
