// AEP v1 envelope codec (docs/protocol/aep.md): the client→server kinds validated with zod, the server→client kinds as
// a closed union, and the one constructor of outbound envelopes. Pure: no sockets, no state, no seq decisions (those
// live in sequencer.ts).
import { randomUUID } from "node:crypto";
import * as z from "zod";
import { WORKER_KINDS } from "../../workers/types.js";

export const AEP_VERSION = "aep/v1";

export const ERROR_CODES = [
  "WORKER_START_FAILED",
  "WORKER_CRASH",
  "WORKER_TIMEOUT",
  "WORKER_OOM",
  "PROCESS_SIGKILL",
  "WORKER_OUTPUT_LIMIT",
  "INVALID_MESSAGE",
  "SESSION_NOT_FOUND",
  "SESSION_BUSY",
  "SESSION_ALREADY_CONNECTED",
  "SESSION_EXPIRED",
  "SESSION_TERMINATED",
  "SESSION_INVALIDATED",
  "UNAUTHORIZED",
  "AUTH_REQUIRED",
  "INTERNAL_ERROR",
  "PROTOCOL_VIOLATION",
  "VERSION_MISMATCH",
  "CONFIG_INVALID",
  "RATE_LIMITED",
  "GATEWAY_OVERLOAD",
  "EXECUTION_TIMEOUT",
  "RECONNECT_REQUIRED",
  "RESUME_RETRY",
  "NOT_SUPPORTED",
  "TURN_TIMEOUT",
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];
export const isErrorCode = (code: string): code is ErrorCode => (ERROR_CODES as readonly string[]).includes(code);

export type Priority = "control" | "data";
export type SessionState = "created" | "running" | "idle" | "terminated";
export type ExecutionStatus = "accepted" | "delivered" | "unknown" | "failed";
export type ControlAction = "terminate" | "delete" | "gc" | "reset" | "cd" | "stop";

// ---- client → server ----

const text = z.string();
const record = z.record(z.string(), z.unknown());

const clientEvents = {
  init: z
    .object({
      worker: z.enum(WORKER_KINDS).optional(),
      workdir: text.min(1).optional(),
      session_key: text.min(1).max(256).optional(),
      token: text.optional(),
      /** The last seq this client received of the session: what came after is replayed (docs/protocol/aep.md §9.3). */
      last_seq: z.number().int().nonnegative().optional(),
    })
    .loose(),
  // Blank content would only come back as an API error from the worker's model call.
  input: z.object({ content: text.refine((c) => c.trim() !== "", "must not be blank"), metadata: record.optional() }),
  permission_response: z.object({ id: text.min(1), allowed: z.boolean(), reason: text.optional() }),
  question_response: z.object({ id: text.min(1), answers: z.record(z.string(), z.string()) }),
  elicitation_response: z.object({
    id: text.min(1),
    action: z.enum(["accept", "decline", "cancel"]),
    content: record.optional(),
  }),
  ping: z.object({}).loose(),
  /** Asks the session's worker for a report (context usage, MCP status…): docs/protocol/aep.md §3. */
  worker_command: z.object({ command: text.min(1).max(64), args: text.optional(), extra: record.optional() }),
  control: z.object({
    action: z.enum(["terminate", "delete", "gc", "reset", "cd", "stop"]),
    reason: text.optional(),
    delay_ms: z.number().int().nonnegative().optional(),
    recoverable: z.boolean().optional(),
    /** `cd` only: the new working directory (additive; the seed's ControlData names no field for it). */
    workdir: text.min(1).optional(),
  }),
} as const;

type ClientEventSchemas = typeof clientEvents;
export type ClientKind = keyof ClientEventSchemas;
export type ClientEvent = { [K in ClientKind]: { type: K; data: z.infer<ClientEventSchemas[K]> } }[ClientKind];

export interface ClientEnvelope {
  id: string;
  session_id: string;
  event: ClientEvent;
}

const envelopeShape = z.object({
  version: z.string(),
  id: text.min(1).max(256),
  seq: z.number().optional(), // clients send 0; the gateway owns seq
  priority: z.enum(["control", "data"]).optional(),
  session_id: z.string().optional(),
  timestamp: z.number().optional(),
  event: z.object({ type: z.string().min(1), data: z.unknown().optional() }),
});

export type DecodeResult =
  | { ok: true; envelope: ClientEnvelope }
  | { ok: false; code: "INVALID_MESSAGE" | "VERSION_MISMATCH" | "NOT_SUPPORTED"; message: string; id?: string };

/** Parses one client frame; every failure is a value (unknown kinds included), never an exception. */
export function decodeClientFrame(raw: string): DecodeResult {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    return { ok: false, code: "INVALID_MESSAGE", message: "frame is not JSON" };
  }
  const shape = envelopeShape.safeParse(json);
  if (!shape.success) return { ok: false, code: "INVALID_MESSAGE", message: `bad envelope: ${describe(shape.error)}` };
  const { id, version, event } = shape.data;
  if (version !== AEP_VERSION)
    return {
      ok: false,
      code: "VERSION_MISMATCH",
      message: `expected version ${AEP_VERSION}, got ${JSON.stringify(version)}`,
      id,
    };
  // Own keys only: `toString`, `constructor`, `__proto__`… are unknown kinds, not Object.prototype members.
  if (!isClientKind(event.type))
    return { ok: false, code: "NOT_SUPPORTED", message: `unknown event type ${JSON.stringify(event.type)}`, id };
  const kind = event.type;
  const data = clientEvents[kind].safeParse(event.data ?? {});
  if (!data.success)
    return { ok: false, code: "INVALID_MESSAGE", message: `bad ${kind} data: ${describe(data.error)}`, id };
  return {
    ok: true,
    envelope: { id, session_id: shape.data.session_id ?? "", event: { type: kind, data: data.data } as ClientEvent },
  };
}

function isClientKind(type: string): type is ClientKind {
  return Object.hasOwn(clientEvents, type);
}

function describe(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}`).join("; ");
}

// ---- server → client ----

export interface QuestionOption {
  label: string;
  description?: string;
  preview?: string;
}
export interface Question {
  id?: string;
  question: string;
  header: string;
  options: QuestionOption[];
  multi_select: boolean;
}

/** The ACP extension fields of tool_call (sent by ACP workers only). */
export interface ToolCallDisplay {
  title?: string;
  kind?: string;
  locations?: Array<{ path: string; line?: number }>;
}
export interface FileDiffData {
  path: string;
  old_text: string;
  new_text: string;
}

export type ServerEvent =
  | {
      type: "input.ack";
      data: {
        client_message_id: string;
        execution_id: string;
        status: ExecutionStatus;
        duplicate?: boolean;
        error_code?: ErrorCode;
      };
    }
  | {
      type: "runtime.execution.started" | "runtime.execution.completed" | "runtime.execution.failed";
      data: {
        execution_id: string;
        status: "started" | "completed" | "failed";
        error_code?: ErrorCode;
        started_at?: number;
        finished_at?: number;
      };
    }
  | { type: "state"; data: { state: SessionState; message?: string } }
  | {
      type: "message.start";
      data: { id: string; role: "assistant"; content_type: string; metadata?: Record<string, unknown> };
    }
  | { type: "message.delta"; data: { message_id: string; content: string } }
  | { type: "message.end"; data: { message_id: string } }
  | {
      type: "message";
      data: { id: string; role: string; content: string; content_type?: string; metadata?: Record<string, unknown> };
    }
  | { type: "tool_call"; data: { id: string; name: string; input: Record<string, unknown> } & ToolCallDisplay }
  | {
      type: "tool_result";
      data: { id: string; output: unknown; error?: string; status?: "completed" | "failed"; diff?: FileDiffData };
    }
  | { type: "tool_update"; data: { id: string; status: string; content?: unknown; diff?: FileDiffData } }
  | { type: "plan"; data: { items: Array<{ content: string; priority: string; status: string }> } }
  | { type: "mode_update"; data: { mode: string } }
  | {
      type: "permission_request";
      data: { id: string; tool_name: string; description?: string; args?: string[]; input_raw?: unknown };
    }
  | { type: "question_request"; data: { id: string; tool_name?: string; questions: Question[] } }
  | {
      type: "elicitation_request";
      data: {
        id: string;
        mcp_server_name: string;
        message: string;
        mode?: string;
        url?: string;
        elicitation_id?: string;
        requested_schema?: Record<string, unknown>;
      };
    }
  | { type: "reasoning"; data: { id: string; content: string; model?: string } }
  | {
      type: "step";
      data: {
        id: string;
        step_type: string;
        name?: string;
        input?: Record<string, unknown>;
        output?: Record<string, unknown>;
      };
    }
  | { type: "raw"; data: { kind: string; raw: unknown } }
  | { type: "context_usage"; data: Record<string, unknown> }
  | { type: "mcp_status"; data: { servers: Array<{ name: string; status: string }> } }
  | { type: "done"; data: { success: boolean; stats?: Record<string, unknown>; dropped?: boolean; reason?: string } }
  /** `client_message_id`: the client frame that caused it; `execution_id`: the turn that failed. */
  | { type: "error"; data: { code: ErrorCode; message: string } & ErrorCause }
  | { type: "pong"; data: Record<string, unknown> };

export type ServerKind = ServerEvent["type"];

/** What an error is tied to (docs/protocol/aep.md §10): the client frame, or the execution, that caused it. */
export interface ErrorCause {
  client_message_id?: string;
  execution_id?: string;
}

export interface ServerEnvelope {
  version: typeof AEP_VERSION;
  id: string;
  seq: number;
  priority?: Priority;
  session_id: string;
  timestamp: number;
  event: ServerEvent;
}

/** Kinds that go ahead of waiting data (docs/protocol/aep.md §6: input.ack and control are delivered directly). */
export function priorityOf(event: ServerEvent): Priority {
  return event.type === "input.ack" || event.type === "pong" ? "control" : "data";
}

export function serverEnvelope(
  sessionId: string,
  seq: number,
  event: ServerEvent,
  now: number = Date.now(),
): ServerEnvelope {
  return {
    version: AEP_VERSION,
    id: `evt_${randomUUID()}`,
    seq,
    priority: priorityOf(event),
    session_id: sessionId,
    timestamp: now,
    event,
  };
}
