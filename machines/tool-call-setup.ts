// The ToolCall machine's setup (machines/tool-call.ts has its graph): context, actors, actions, guards and the
// helpers the graph's transitions share.
import { assign, enqueueActions, fromPromise, sendParent, setup } from "xstate";
import type { AgentServerMessage } from "../proto/gen/agent/v1/agent_pb.js";
import { frames } from "../cursor/frames.js";
import { toolDriver } from "../cursor/tools/registry.js";
import {
  DRIVER_PAUSE_MS,
  type DriverStep,
  type ModeSwitch,
  type ServiceRequest,
  type ServiceResult,
  type ToolCompletion,
} from "../cursor/tools/types.js";
import { pendingExecMachine } from "./pending-exec.js";
import type {
  CommitResultInput,
  CommitResultOutput,
  ToolCallEvent,
  ToolCallFailure,
  ToolCallInput,
  ToolCallReport,
} from "./tool-call-events.js";

export interface ToolCallContext extends ToolCallInput {
  startedAtMs: number;
  /** The driver's own state, threaded through its steps. */
  driverState: unknown;
  /** The driver's last step; the `deciding` state routes on its kind. */
  step: DriverStep<unknown> | undefined;
  /** The Exec the driver asked for last (its PendingExec child is `exec-<id>`); undefined before the first. */
  execId: number | undefined;
  /** The interaction_query the driver is waiting on an answer to; undefined before the first. */
  interactionId: number | undefined;
  completion: ToolCompletion | undefined;
  failure: string | undefined;
}

export const execChild = (id: number) => `exec-${id}`;
export const driverOf = (c: ToolCallContext) => toolDriver(c.invocation.name)!;
export const startedCard = (c: ToolCallContext) => driverOf(c).started(c.invocation, c.ctx);

export const toolCallSetup = setup({
  types: {
    context: {} as ToolCallContext,
    input: {} as ToolCallInput,
    events: {} as ToolCallEvent,
  },
  actors: {
    pendingExec: pendingExecMachine,
    commitResult: fromPromise<CommitResultOutput, CommitResultInput>(async () => {
      throw new Error("commitResult must be supplied by the engine");
    }),
    /** An approved tool's own work on the configured search or image service (stopping it aborts the request). */
    callService: fromPromise<ServiceResult, ServiceRequest>(async () => {
      throw new Error("callService must be supplied by the engine");
    }),
  },
  actions: {
    emitFrame: (_, _params: { message: AgentServerMessage }) => {},
    wantExecId: sendParent(({ context }): ToolCallReport => ({ type: "EXEC_ID_WANTED", index: context.index })),
    wantInteractionId: sendParent(
      ({ context }): ToolCallReport => ({ type: "INTERACTION_ID_WANTED", index: context.index }),
    ),
    reportCompleted: sendParent(
      ({ context }, { mode }: { mode?: ModeSwitch }): ToolCallReport => ({
        type: "CALL_COMPLETED",
        index: context.index,
        mcpServers: context.completion?.mcpServers,
        ...(mode ? { mode } : {}),
      }),
    ),
    reportFailed: sendParent(
      ({ context }, params: { cause: ToolCallFailure }): ToolCallReport => ({
        type: "CALL_FAILED",
        index: context.index,
        cause: params.cause,
        message: context.failure ?? "tool call failed",
      }),
    ),
    /** The driver's state after its last step. */
    keepStep: assign({
      driverState: ({ context }) =>
        context.step && "state" in context.step ? context.step.state : context.driverState,
    }),
  },
  guards: {
    argsInvalid: ({ context }) => "invalid" in startedCard(context),
    stepIs: ({ context }, params: { kind: DriverStep<unknown>["kind"] }) => context.step?.kind === params.kind,
    /** The driver asks for its first Exec, which takes the id the round set aside. */
    firstExec: ({ context }) =>
      context.step?.kind === "exec" && context.execId === undefined && context.interactionId === undefined,
    /** An answer to this call's open query with a branch set; an empty oneof is not an answer yet (§5.10). */
    answersQuery: ({ context, event }) =>
      event.type === "CLIENT_INTERACTION" && event.id === context.interactionId && event.answer.case !== undefined,
    fromCurrentExec: ({ context, event }) => event.type === "EXEC_DATA" && event.execId === context.execId,
  },
  delays: { driverPause: DRIVER_PAUSE_MS },
});

type StepOf<K extends DriverStep<unknown>["kind"]> = Extract<DriverStep<unknown>, { kind: K }>;
export const stepOf = <K extends DriverStep<unknown>["kind"]>(c: ToolCallContext, _kind: K) => c.step as StepOf<K>;
export const stepIs = (kind: DriverStep<unknown>["kind"]) => ({ type: "stepIs" as const, params: { kind } });
export const serviceStep = (c: ToolCallContext, result: ServiceResult): DriverStep<unknown> =>
  driverOf(c).onServiceResult!(c.invocation, c.driverState, result);

/** Sends the Exec the driver asked for under the given id and starts its PendingExec. */
export const issueExec = (execId: (args: { context: ToolCallContext; event: ToolCallEvent }) => number) => [
  toolCallSetup.assign({ execId }),
  {
    type: "emitFrame" as const,
    params: ({ context }: { context: ToolCallContext }) => ({
      message: frames.exec(context.execId!, context.invocation.callId, stepOf(context, "exec").request),
    }),
  },
  toolCallSetup.spawnChild("pendingExec", {
    id: ({ context }) => execChild(context.execId!),
    input: ({ context }) => ({ id: context.execId!, callId: context.invocation.callId }),
  }),
];

/** The driver consumed the current Exec's terminal result: its stream_close is now a tail and it is never aborted. */
export const takeExec = toolCallSetup.createAction(
  enqueueActions(({ context, enqueue, self }) => {
    if (context.execId === undefined) return;
    const child = self.getSnapshot().children[execChild(context.execId)];
    if (child) enqueue.sendTo(child, { type: "TAKE" });
  }),
);

export const abortExec = toolCallSetup.createAction(
  enqueueActions(({ context, enqueue, self }) => {
    const child = context.execId === undefined ? undefined : self.getSnapshot().children[execChild(context.execId)];
    if (child) enqueue.sendTo(child, { type: "ABORT" });
  }),
);

export const forwardToExec = toolCallSetup.createAction(
  enqueueActions(({ event, enqueue, self }) => {
    if (event.type !== "CLIENT_EXEC" && event.type !== "CLIENT_STREAM_CLOSE" && event.type !== "CLIENT_THROW") return;
    const child = self.getSnapshot().children[execChild(event.id)];
    if (!child) return;
    enqueue.sendTo(
      child,
      event.type === "CLIENT_EXEC"
        ? { type: "DATA", message: event.message }
        : event.type === "CLIENT_THROW"
          ? { type: "THROW", error: event.error }
          : { type: "STREAM_CLOSE" },
    );
  }),
);
