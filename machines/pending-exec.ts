// PendingExec: one per Exec id inside a run (docs/protocol/cursor-tools.md §1.2, §2.5, §3.1). Existence in `running` is
// the only "pending" flag: the terminal result is taken once (TAKE, decided by the tool driver), after which the
// client's stream_close is a no-op tail. stream_close or throw before the result is a protocol error for the run. On
// cancel a running exec is aborted; a taken one (e.g. a backgrounded shell) never is (docs/protocol/cursor-tools.md
// §5.5).
import { sendParent, setup } from "xstate";
import type { ExecClientMessage } from "../proto/gen/agent/v1/agent_pb.js";

export interface PendingExecInput {
  id: number;
  callId: string;
}

export type PendingExecEvent =
  | { type: "DATA"; message: ExecClientMessage["message"] }
  | { type: "STREAM_CLOSE" }
  | { type: "THROW"; error: string }
  | { type: "TAKE" }
  | { type: "ABORT" };

/** Sent to the parent (the ToolCall that asked for the exec). */
export type PendingExecReport =
  | { type: "EXEC_DATA"; execId: number; callId: string; message: ExecClientMessage["message"] }
  | { type: "EXEC_FAILED"; execId: number; callId: string; message: string };

export const pendingExecMachine = setup({
  types: {
    context: {} as PendingExecInput,
    input: {} as PendingExecInput,
    events: {} as PendingExecEvent,
  },
  actions: {
    /** Emits ExecServerControlMessage.abort for this id (supplied by the engine). */
    sendAbort: (_, _params: { id: number }) => {},
    forwardData: sendParent(
      ({ context, event }): PendingExecReport => ({
        type: "EXEC_DATA",
        execId: context.id,
        callId: context.callId,
        message: event.type === "DATA" ? event.message : { case: undefined },
      }),
    ),
    reportClosedEarly: sendParent(
      ({ context }): PendingExecReport => ({
        type: "EXEC_FAILED",
        execId: context.id,
        callId: context.callId,
        message: `exec ${context.id} stream closed before its result`,
      }),
    ),
    reportThrow: sendParent(
      ({ context, event }): PendingExecReport => ({
        type: "EXEC_FAILED",
        execId: context.id,
        callId: context.callId,
        message: `exec ${context.id} threw: ${event.type === "THROW" ? event.error : "unknown error"}`,
      }),
    ),
  },
  guards: {
    /** An ExecClientMessage with no oneof set is not a result: keep waiting (docs/protocol/cursor-tools.md §2.5). */
    carriesPayload: ({ event }) => event.type === "DATA" && event.message.case !== undefined,
  },
}).createMachine({
  description:
    "One per Exec id. While running, client data is forwarded to the tool call that asked for it; the terminal result is taken" +
    " exactly once, after which the client's stream_close is a no-op tail. stream_close or throw before the " +
    "result is a protocol error; abort is sent only for an exec that is still running.",
  id: "pendingExec",
  context: ({ input }) => input,
  initial: "running",
  states: {
    running: {
      on: {
        DATA: { guard: "carriesPayload", actions: "forwardData" },
        TAKE: "taken",
        STREAM_CLOSE: { target: "failed", actions: "reportClosedEarly" },
        THROW: { target: "failed", actions: "reportThrow" },
        ABORT: { target: "aborted", actions: { type: "sendAbort", params: ({ context }) => ({ id: context.id }) } },
      },
    },
    /** Result consumed; only the stream_close tail is expected. */
    taken: {
      on: { STREAM_CLOSE: "closed" },
    },
    closed: { type: "final" },
    failed: { type: "final" },
    aborted: { type: "final" },
  },
});
