// ToolRound: the batch of tool calls from one model response (docs/protocol/cursor-run.md §8.3;
// docs/protocol/cursor-tools.md §2–§5, §4.1). A staged checkpoint is published before any tool runs; each call is
// driven by its tool's pure driver through PendingExec children; each result is committed durably, in completion order,
// before its tool_call_completed; when every call is settled a settled checkpoint is published, and only then may the
// next model call start.
import { assign, enqueueActions, fromPromise, setup } from "xstate";
import type { AgentServerMessage, ExecClientMessage, ToolCall } from "../proto/gen/agent/v1/agent_pb.js";
import { frames } from "../cursor/frames.js";
import { toolDriver } from "../cursor/tools/registry.js";
import type { DriverStep, ToolCompletion, ToolContext, ToolInvocation } from "../cursor/tools/types.js";
import { checkpointMachine, type CheckpointOutput } from "./checkpoint.js";
import { pendingExecMachine, type PendingExecReport } from "./pending-exec.js";

export interface ToolRoundInput {
  modelCallId: string;
  calls: ToolInvocation[];
  ctx: ToolContext;
  execIdBase: number;
  kvIdBase: number;
}

interface CallState {
  invocation: ToolInvocation;
  driverState: unknown;
  execId: number | undefined;
  startedAtMs: number;
  completed: boolean;
  settled: boolean;
}

type Outcome = { kind: "ok" } | { kind: "protocol" | "checkpoint" | "canceled"; message: string };

interface ToolRoundContext {
  modelCallId: string;
  ctx: ToolContext;
  calls: CallState[];
  nextExecId: number;
  nextKvId: number;
  outcome: Outcome;
}

export type ToolRoundOutput = { outcome: Outcome; nextExecId: number; nextKvId: number };

export type ToolRoundEvent =
  | { type: "CLIENT_EXEC"; id: number; message: ExecClientMessage["message"] }
  | { type: "CLIENT_STREAM_CLOSE"; id: number }
  | { type: "CLIENT_THROW"; id: number; error: string }
  | { type: "CANCEL" }
  | PendingExecReport
  | { type: `xstate.done.actor.commit.${number}`; output: CommitResultOutput }
  | { type: `xstate.error.actor.commit.${number}`; error: unknown };

/** The engine's durable commit of one result: canonical pair appended, ToolCall step recorded with timestamps. */
export interface CommitResultInput {
  callIndex: number;
  invocation: ToolInvocation;
  completion: ToolCompletion;
  startedAtMs: number;
}
export interface CommitResultOutput {
  callIndex: number;
  toolCall: ToolCall;
}

const execChild = (id: number) => `exec-${id}`;

const toolRoundSetup = setup({
  types: {
    context: {} as ToolRoundContext,
    input: {} as ToolRoundInput,
    output: {} as ToolRoundOutput,
    events: {} as ToolRoundEvent,
  },
  actors: {
    checkpoint: checkpointMachine,
    pendingExec: pendingExecMachine,
    commitResult: fromPromise<CommitResultOutput, CommitResultInput>(async () => {
      throw new Error("commitResult must be supplied by the engine");
    }),
  },
  actions: {
    emitFrame: (_, _params: { message: AgentServerMessage }) => {},
    markCanceled: assign({ outcome: { kind: "canceled", message: "canceled" } as Outcome }),
    protocolError: assign({
      outcome: (_, params: { message: string }) => ({ kind: "protocol" as const, message: params.message }),
    }),
    checkpointFailed: assign({
      outcome: (_, params: { message: string }) => ({ kind: "checkpoint" as const, message: params.message }),
    }),
    takeKvIds: assign({ nextKvId: (_, params: { nextKvId: number }) => params.nextKvId }),
  },
  guards: {
    allCallsSettled: ({ context }) => context.calls.every((c) => c.settled),
    protocolErrorFound: ({ context }) => context.outcome.kind === "protocol",
    checkpointRefused: (_, params: { output: CheckpointOutput }) => !params.output.ok,
  },
});

/** Effects of driver steps, applied by the machine's actions in order. */
type Effect =
  | { kind: "frame"; message: AgentServerMessage }
  | { kind: "take"; execId: number }
  | { kind: "spawnExec"; execId: number; callId: string }
  | { kind: "commit"; input: CommitResultInput };

const runEffects = toolRoundSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    const plan = planFor(context, event);
    if (!plan) return;
    for (const effect of plan.effects) {
      switch (effect.kind) {
        case "frame":
          enqueue({ type: "emitFrame", params: { message: effect.message } });
          break;
        case "take":
          enqueue.sendTo(execChild(effect.execId), { type: "TAKE" });
          break;
        case "spawnExec":
          enqueue.spawnChild("pendingExec", {
            id: execChild(effect.execId),
            input: { id: effect.execId, callId: effect.callId },
          });
          break;
        case "commit":
          enqueue.spawnChild("commitResult", { id: `commit.${effect.input.callIndex}`, input: effect.input });
          break;
      }
    }
    enqueue.assign(plan.patch);
  }),
);

/** Routes a client Exec message: live child ⇒ forward; an id this request already finished ⇒ drop; else protocol error.
 * */
const routeClient = toolRoundSetup.createAction(
  enqueueActions(({ context, event, enqueue, self }) => {
    if (event.type !== "CLIENT_EXEC" && event.type !== "CLIENT_STREAM_CLOSE" && event.type !== "CLIENT_THROW") return;
    const child = self.getSnapshot().children[execChild(event.id)];
    if (child) {
      const forwarded =
        event.type === "CLIENT_EXEC"
          ? { type: "DATA" as const, message: event.message }
          : event.type === "CLIENT_THROW"
            ? { type: "THROW" as const, error: event.error }
            : { type: "STREAM_CLOSE" as const };
      enqueue.sendTo(child, forwarded);
      return;
    }
    if (event.id < context.nextExecId) return; // finished exec of this request: a late tail, nothing to do
    enqueue.assign({ outcome: { kind: "protocol", message: `exec message for unknown exec id ${event.id}` } });
  }),
);

const settle = toolRoundSetup.createAction(
  enqueueActions(({ context, event, enqueue }) => {
    if (!event.type.startsWith("xstate.done.actor.commit.")) return;
    const { callIndex, toolCall } = (event as { output: CommitResultOutput }).output;
    const call = context.calls[callIndex]!;
    enqueue({
      type: "emitFrame",
      params: { message: frames.toolCallCompleted(call.invocation.callId, context.modelCallId, toolCall) },
    });
    enqueue.assign({ calls: context.calls.map((c, i) => (i === callIndex ? { ...c, settled: true } : c)) });
  }),
);

/** Abort every exec still running; taken ones (e.g. backgrounded shells) are never aborted
 * (docs/protocol/cursor-tools.md §5.5). */
const abortRunning = toolRoundSetup.createAction(
  enqueueActions(({ context, enqueue, self }) => {
    for (const call of context.calls) {
      if (call.completed || call.execId === undefined) continue;
      const child = self.getSnapshot().children[execChild(call.execId)];
      if (child) enqueue.sendTo(child, { type: "ABORT" });
    }
  }),
);

/** A state that publishes one checkpoint of the round, then moves on; a refused checkpoint ends the round. */
function checkpointState(kind: "staged" | "settled", next: "running" | "settled") {
  return toolRoundSetup.createStateConfig({
    invoke: {
      src: "checkpoint",
      systemId: "checkpoint",
      input: ({ context }) => ({ kind, kvIdBase: context.nextKvId }),
      onDone: [
        {
          guard: { type: "checkpointRefused", params: ({ event }) => ({ output: event.output }) },
          target: "failed",
          actions: [
            { type: "takeKvIds", params: ({ event }) => ({ nextKvId: event.output.nextKvId }) },
            {
              type: "checkpointFailed",
              params: ({ event }) => ({ message: event.output.error ?? `${kind} checkpoint failed` }),
            },
          ],
        },
        { target: next, actions: { type: "takeKvIds", params: ({ event }) => ({ nextKvId: event.output.nextKvId }) } },
      ],
    },
    on: { CANCEL: { target: "canceled", actions: "markCanceled" } },
    always: { guard: "protocolErrorFound", target: "failed" },
  });
}

export const toolRoundMachine = toolRoundSetup.createMachine({
  description:
    "The tool calls of one model response. A staged checkpoint is published before any tool runs; each call " +
    "is driven by its tool driver through PendingExec children; every result is committed durably, in " +
    "completion order, before its tool_call_completed; once all calls are settled a settled checkpoint is " +
    "published, and only then does the next model call start. A protocol error, a failed checkpoint or a " +
    "cancel ends the round, aborting every exec still running (never a backgrounded shell).",
  id: "toolRound",
  context: ({ input }) => ({
    modelCallId: input.modelCallId,
    ctx: input.ctx,
    calls: input.calls.map((invocation) => ({
      invocation,
      driverState: undefined,
      execId: undefined,
      startedAtMs: 0,
      completed: false,
      settled: false,
    })),
    nextExecId: input.execIdBase,
    nextKvId: input.kvIdBase,
    outcome: { kind: "ok" },
  }),
  on: {
    CLIENT_EXEC: { actions: routeClient },
    CLIENT_STREAM_CLOSE: { actions: routeClient },
    CLIENT_THROW: { actions: routeClient },
  },
  initial: "staging",
  states: {
    staging: checkpointState("staged", "running"),
    running: {
      entry: runEffects,
      on: {
        EXEC_DATA: { actions: runEffects },
        EXEC_FAILED: {
          target: "failed",
          actions: [abortRunning, { type: "protocolError", params: ({ event }) => ({ message: event.message }) }],
        },
        "xstate.done.actor.commit.*": { actions: settle },
        "xstate.error.actor.commit.*": {
          target: "failed",
          actions: [
            abortRunning,
            {
              type: "checkpointFailed",
              params: ({ event }: { event: ToolRoundEvent }) => ({
                message: `tool result commit failed: ${String((event as { error: unknown }).error)}`,
              }),
            },
          ],
        },
        CANCEL: { target: "canceled", actions: [abortRunning, "markCanceled"] },
      },
      always: [
        // A driver or the exec router found a client protocol error while handling an exec message.
        { guard: "protocolErrorFound", target: "failed", actions: abortRunning },
        { guard: "allCallsSettled", target: "settling" },
      ],
    },
    settling: checkpointState("settled", "settled"),
    settled: { type: "final" },
    failed: { type: "final" },
    canceled: { type: "final" },
  },
  output: ({ context }) => ({ outcome: context.outcome, nextExecId: context.nextExecId, nextKvId: context.nextKvId }),
});

/** Plans what starting the calls (on entry) or one EXEC_DATA means: frames, exec children, commits, context patch. */
function planFor(
  context: ToolRoundContext,
  event: ToolRoundEvent,
): { effects: Effect[]; patch: Partial<ToolRoundContext> } | undefined {
  const calls = context.calls.map((c) => ({ ...c }));
  const effects: Effect[] = [];
  let nextExecId = context.nextExecId;
  let failure: string | undefined;
  const now = Date.now();

  const apply = (index: number, step: DriverStep<unknown>) => {
    const call = calls[index]!;
    const { callId } = call.invocation;
    switch (step.kind) {
      case "exec": {
        if (call.execId !== undefined) effects.push({ kind: "take", execId: call.execId });
        const execId = nextExecId++;
        effects.push(
          { kind: "spawnExec", execId, callId },
          { kind: "frame", message: frames.exec(execId, callId, step.request) },
        );
        call.execId = execId;
        call.driverState = step.state;
        return;
      }
      case "delta":
        effects.push({ kind: "frame", message: frames.toolCallDelta(callId, context.modelCallId, step.delta) });
        call.driverState = step.state;
        return;
      case "wait":
        call.driverState = step.state;
        return;
      case "complete":
        if (call.execId !== undefined) effects.push({ kind: "take", execId: call.execId });
        call.completed = true;
        call.driverState = step.state;
        effects.push({
          kind: "commit",
          input: {
            callIndex: index,
            invocation: call.invocation,
            completion: step.completion,
            startedAtMs: call.startedAtMs,
          },
        });
        return;
      case "protocol_error":
        // A wrong branch still consumes its exec id (docs/protocol/cursor-tools.md §3.4): it is not aborted afterwards.
        if (call.execId !== undefined) effects.push({ kind: "take", execId: call.execId });
        failure ??= step.message;
        return;
    }
  };

  if (event.type === "EXEC_DATA") {
    const index = calls.findIndex((c) => c.execId === event.execId && !c.completed);
    if (index < 0) return undefined; // a tail for an exec whose call already completed
    const call = calls[index]!;
    apply(index, toolDriver(call.invocation.name)!.onExecMessage(call.invocation, call.driverState, event.message));
  } else {
    calls.forEach((call, index) => {
      call.startedAtMs = now;
      const driver = toolDriver(call.invocation.name)!;
      const started = driver.started(call.invocation, context.ctx);
      if ("invalid" in started) {
        // Arguments the tool cannot accept end the call with an error result the model can read
        // (docs/protocol/cursor-tools.md §2.4).
        const placeholder = driver.placeholder(call.invocation.callId);
        effects.push({
          kind: "frame",
          message: frames.toolCallStarted(call.invocation.callId, context.modelCallId, placeholder),
        });
        apply(index, {
          kind: "complete",
          state: undefined,
          completion: { content: started.invalid, isError: true, toolCall: placeholder },
        });
        return;
      }
      effects.push({
        kind: "frame",
        message: frames.toolCallStarted(call.invocation.callId, context.modelCallId, started.toolCall),
      });
      apply(index, driver.begin(call.invocation, context.ctx));
    });
  }
  return {
    effects,
    patch: { calls, nextExecId, ...(failure ? { outcome: { kind: "protocol" as const, message: failure } } : {}) },
  };
}
