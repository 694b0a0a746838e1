// ToolCall: the life of one tool call inside a round (docs/protocol/cursor-tools.md §2–§5). tool_call_started is
// sent, the tool's pure driver decides each next step, every Exec it asks for is a PendingExec child, and the result
// is committed durably before tool_call_completed. How a call reaches the client (an Exec, an Interaction query, or
// nothing for a local tool) is a choice of states here, never a flag; a driver that waits pauses between its Execs.
import { assign } from "xstate";
import { frames } from "../cursor/frames.js";
import type { PendingExecReport } from "./pending-exec.js";
import type { ClientInteractionEvent } from "./tool-call-events.js";
import {
  abortExec,
  driverOf,
  forwardToExec,
  issueExec,
  serviceStep,
  startedCard,
  stepIs,
  stepOf,
  takeExec,
  toolCallSetup,
} from "./tool-call-setup.js";

export type {
  ClientExecEvent,
  ClientInteractionEvent,
  CommitResultInput,
  CommitResultOutput,
  ToolCallEvent,
  ToolCallFailure,
  ToolCallInput,
  ToolCallReport,
} from "./tool-call-events.js";

export const toolCallMachine = toolCallSetup.createMachine({
  description:
    "One tool call of a round. tool_call_started is sent first (an empty card when the arguments do not fit the " +
    "tool; their error result is then committed at once). The driver's steps decide the rest: each Exec gets an " +
    "Exec id (the first one set aside by the round, later ones granted by it) and a PendingExec child; a driver " +
    "delta is a tool_call_delta; an approved service call (WebSearch, GenerateImage) runs while `serving`; the " +
    "terminal result is taken, committed durably, and only then is tool_call_completed sent. A stream_close or throw before the result, a result of the wrong kind, or a failed " +
    "commit fails the call; an abort aborts the Exec still running, never one whose result was taken.",
  id: "toolCall",
  context: ({ input }) => ({
    ...input,
    startedAtMs: Date.now(),
    driverState: undefined,
    step: undefined,
    execId: undefined,
    interactionId: undefined,
    completion: undefined,
    failure: undefined,
  }),
  // Messages for any of this call's Execs go to that Exec's PendingExec; one that has ended drops them as a tail.
  on: {
    CLIENT_EXEC: { actions: forwardToExec },
    CLIENT_STREAM_CLOSE: { actions: forwardToExec },
    CLIENT_THROW: { actions: forwardToExec },
  },
  initial: "starting",
  states: {
    /** tool_call_started; arguments the tool cannot accept become an error result for the model (§2.4). */
    starting: {
      entry: {
        type: "emitFrame",
        params: ({ context }) => {
          const card = startedCard(context);
          const toolCall = "invalid" in card ? driverOf(context).placeholder(context.invocation.callId) : card.toolCall;
          return { message: frames.toolCallStarted(context.invocation.callId, context.modelCallId, toolCall) };
        },
      },
      always: [
        {
          guard: "argsInvalid",
          target: "committing",
          actions: assign({
            completion: ({ context }) => {
              const card = startedCard(context);
              const content = "invalid" in card ? card.invalid : "";
              return { content, isError: true, toolCall: driverOf(context).placeholder(context.invocation.callId) };
            },
          }),
        },
        {
          target: "deciding",
          actions: assign({ step: ({ context }) => driverOf(context).begin(context.invocation, context.ctx) }),
        },
      ],
    },
    /** Routes on the driver's last step. */
    deciding: {
      always: [
        {
          guard: "firstExec",
          target: "executing",
          actions: ["keepStep", ...issueExec(({ context }) => context.reservedExecId)],
        },
        { guard: stepIs("exec"), target: "awaitingExecId", actions: ["keepStep", takeExec] },
        { guard: stepIs("query"), target: "awaitingInteractionId", actions: ["keepStep", takeExec] },
        { guard: stepIs("service"), target: "serving", actions: "keepStep" },
        {
          guard: stepIs("delta"),
          target: "executing",
          actions: [
            "keepStep",
            {
              type: "emitFrame",
              params: ({ context }) => ({
                message: frames.toolCallDelta(
                  context.invocation.callId,
                  context.modelCallId,
                  stepOf(context, "delta").delta,
                ),
              }),
            },
          ],
        },
        { guard: stepIs("wait"), target: "executing", actions: "keepStep" },
        // The Exec's terminal result was consumed; the driver looks again after the pause.
        { guard: stepIs("pause"), target: "pausing", actions: ["keepStep", takeExec] },
        {
          guard: stepIs("complete"),
          target: "committing",
          actions: [
            "keepStep",
            takeExec,
            assign({ completion: ({ context }) => stepOf(context, "complete").completion }),
          ],
        },
        // A result of the wrong kind still consumes its Exec id (§3.4): it is taken, not aborted.
        {
          guard: stepIs("protocol_error"),
          target: "failed",
          actions: [
            takeExec,
            assign({ failure: ({ context }) => stepOf(context, "protocol_error").message }),
            { type: "reportFailed", params: { cause: "protocol" as const } },
          ],
        },
      ],
    },
    /** Every Exec after the first takes the round's next id, so ids keep increasing across the request (§3.1). */
    awaitingExecId: {
      entry: "wantExecId",
      on: {
        EXEC_ID_GRANTED: {
          target: "executing",
          actions: issueExec(({ event }) => (event as { execId: number }).execId),
        },
        ABORT: "aborted",
      },
    },
    /** A question for the user goes out as an interaction_query under the round's next interaction id. */
    awaitingInteractionId: {
      entry: "wantInteractionId",
      on: {
        INTERACTION_ID_GRANTED: {
          target: "querying",
          actions: [
            assign({ interactionId: ({ event }) => event.interactionId }),
            {
              type: "emitFrame",
              params: ({ context }) => ({
                message: frames.interactionQuery(context.interactionId!, stepOf(context, "query").query),
              }),
            },
          ],
        },
        ABORT: "aborted",
      },
    },
    /** The query is out; the client's interaction_response decides the next step (there is nothing to abort). */
    querying: {
      on: {
        CLIENT_INTERACTION: {
          guard: "answersQuery",
          target: "deciding",
          actions: assign({
            step: ({ context, event }) => {
              const driver = driverOf(context);
              const { answer } = event as ClientInteractionEvent;
              return driver.onInteractionResponse
                ? driver.onInteractionResponse(context.invocation, context.driverState, answer)
                : { kind: "protocol_error", message: `${driver.name} sent no interaction query` };
            },
          }),
        },
        ABORT: "aborted",
      },
    },
    /** The engine runs the approved service call; its result, or its failure, is the driver's next input. */
    serving: {
      invoke: {
        id: "service",
        src: "callService",
        input: ({ context }) => stepOf(context, "service").request,
        onDone: {
          target: "deciding",
          actions: assign({ step: ({ context, event }) => serviceStep(context, event.output) }),
        },
        onError: {
          target: "deciding",
          actions: assign({
            step: ({ context, event }) =>
              serviceStep(context, { kind: "error", message: `The service call failed: ${String(event.error)}` }),
          }),
        },
      },
      on: { ABORT: "aborted" },
    },
    /** The Exec is out; its PendingExec forwards each client message with a payload. */
    executing: {
      on: {
        EXEC_DATA: {
          guard: "fromCurrentExec",
          target: "deciding",
          actions: assign({
            step: ({ context, event }) =>
              driverOf(context).onExecMessage(
                context.invocation,
                context.driverState,
                (event as Extract<PendingExecReport, { type: "EXEC_DATA" }>).message,
              ),
          }),
        },
        EXEC_FAILED: {
          target: "failed",
          actions: [
            assign({ failure: ({ event }) => event.message }),
            { type: "reportFailed", params: { cause: "protocol" as const } },
          ],
        },
        ABORT: { target: "aborted", actions: abortExec },
      },
    },
    /** Nothing is out: the driver waits before its next step (AwaitShell, §5.13); an abort has nothing to abort. */
    pausing: {
      after: {
        driverPause: {
          target: "deciding",
          actions: assign({
            step: ({ context }) => {
              const driver = driverOf(context);
              return driver.onResume
                ? driver.onResume(context.invocation, context.driverState)
                : { kind: "protocol_error", message: `${driver.name} cannot resume from a pause` };
            },
          }),
        },
      },
      on: { ABORT: "aborted" },
    },
    /** The result is made durable before anyone is told (§4.2). */
    committing: {
      invoke: {
        id: "commit",
        src: "commitResult",
        input: ({ context }) => ({
          callIndex: context.index,
          invocation: context.invocation,
          completion: context.completion!,
          startedAtMs: context.startedAtMs,
        }),
        onDone: {
          target: "completed",
          actions: [
            {
              type: "emitFrame",
              params: ({ context, event }) => ({
                message: frames.toolCallCompleted(
                  context.invocation.callId,
                  context.modelCallId,
                  event.output.toolCall,
                ),
              }),
            },
            { type: "reportCompleted", params: ({ event }) => ({ mode: event.output.mode }) },
          ],
        },
        onError: {
          target: "failed",
          actions: [
            assign({ failure: ({ event }) => `tool result commit failed: ${String(event.error)}` }),
            { type: "reportFailed", params: { cause: "commit" as const } },
          ],
        },
      },
      on: { ABORT: "aborted" },
    },
    completed: { type: "final" },
    failed: { type: "final" },
    aborted: { type: "final" },
  },
});
