// ToolRound: the batch of tool calls from one model response (docs/protocol/cursor-run.md §8.3;
// docs/protocol/cursor-tools.md §2–§5, §4.1). A staged checkpoint is published before any tool runs; each call is a
// ToolCall child; each result is committed durably, in completion order, before its tool_call_completed; when every
// call has completed a settled checkpoint is published, and only then may the next model call start.
import { assign, setup } from "xstate";
import { refreshedCatalog } from "../cursor/tools/mcp-tools.js";
import type { ModeSwitch, ToolContext, ToolInvocation } from "../cursor/tools/types.js";
import { checkpointMachine, type CheckpointOutput } from "./checkpoint.js";
import {
  type ClientExecEvent,
  type ClientInteractionEvent,
  type ToolCallReport,
  toolCallMachine,
} from "./tool-call.js";

export interface ToolRoundInput {
  modelCallId: string;
  calls: ToolInvocation[];
  ctx: ToolContext;
  execIdBase: number;
  interactionIdBase: number;
  kvIdBase: number;
}

type Outcome = { kind: "ok" } | { kind: "protocol" | "checkpoint" | "canceled"; message: string };

interface ToolRoundContext {
  modelCallId: string;
  ctx: ToolContext;
  calls: ToolInvocation[];
  completed: number;
  nextExecId: number;
  nextInteractionId: number;
  nextKvId: number;
  /** Exec id → the index of the call it belongs to (client messages carry only the Exec id). */
  execOwners: ReadonlyMap<number, number>;
  /** Interaction id → the index of the call that asked. */
  interactionOwners: ReadonlyMap<number, number>;
  outcome: Outcome;
  /** The last mode switch a call of this round completed with, in completion order. */
  mode: ModeSwitch | undefined;
}

/** `ctx` carries what the round learned for the next ones (the client's MCP tools, from a GetMcpTools listing);
 * `mode`, an approved SwitchMode. */
export type ToolRoundOutput = {
  outcome: Outcome;
  nextExecId: number;
  nextInteractionId: number;
  nextKvId: number;
  ctx: ToolContext;
  mode?: ModeSwitch;
};

export type ToolRoundEvent = ClientExecEvent | ClientInteractionEvent | { type: "CANCEL" } | ToolCallReport;

/** A client message of either bridge, with the id the round routes it by. */
type ClientBridgeEvent = ClientExecEvent | ClientInteractionEvent;
const isClientBridge = (e: ToolRoundEvent): e is ClientBridgeEvent => e.type.startsWith("CLIENT_");
/** The owner table and the next free id of the id family a client message belongs to. */
const familyOf = (c: ToolRoundContext, e: ClientBridgeEvent) =>
  e.type === "CLIENT_INTERACTION"
    ? {
        owners: c.interactionOwners,
        next: c.nextInteractionId,
        what: "interaction response for unknown interaction id",
      }
    : { owners: c.execOwners, next: c.nextExecId, what: "exec message for unknown exec id" };

const callChild = (index: number) => `call-${index}`;

const toolRoundSetup = setup({
  types: {
    context: {} as ToolRoundContext,
    input: {} as ToolRoundInput,
    output: {} as ToolRoundOutput,
    events: {} as ToolRoundEvent,
  },
  actors: { checkpoint: checkpointMachine, toolCall: toolCallMachine },
  actions: {
    markCanceled: assign({ outcome: { kind: "canceled", message: "canceled" } as Outcome }),
    protocolError: assign({
      outcome: (_, params: { message: string }) => ({ kind: "protocol" as const, message: params.message }),
    }),
    checkpointFailed: assign({
      outcome: (_, params: { message: string }) => ({ kind: "checkpoint" as const, message: params.message }),
    }),
    takeKvIds: assign({ nextKvId: (_, params: { nextKvId: number }) => params.nextKvId }),
    /** The staged checkpoint says where the turn stands; the round's local tools build on it. */
    takeTurn: assign({
      ctx: ({ context }, params: { output: CheckpointOutput }) =>
        params.output.turn ? { ...context.ctx, turn: params.output.turn } : context.ctx,
    }),
    countCompleted: assign({
      completed: ({ context }) => context.completed + 1,
      mode: ({ context, event }) => (event.type === "CALL_COMPLETED" && event.mode) || context.mode,
    }),
    /** A GetMcpTools listing is the client's live MCP state: later rounds resolve MCP calls against it. */
    refreshMcp: assign({
      ctx: ({ context, event }) =>
        event.type === "CALL_COMPLETED" && event.mcpServers
          ? { ...context.ctx, mcp: refreshedCatalog(context.ctx.mcp, event.mcpServers) }
          : context.ctx,
    }),
  },
  guards: {
    allCallsCompleted: ({ context }) => context.completed === context.calls.length,
    checkpointRefused: (_, params: { output: CheckpointOutput }) => !params.output.ok,
    /** The id belongs to a call of this round (its ToolCall drops the message if that Exec has ended). */
    ownedId: ({ context, event }) => isClientBridge(event) && familyOf(context, event).owners.has(event.id),
    /** An id this request issued in an earlier round: a late tail (§3.3). */
    earlierId: ({ context, event }) => isClientBridge(event) && event.id < familyOf(context, event).next,
    /** An id this request never issued: a client protocol error (§3.3). */
    unknownId: ({ context, event }) => isClientBridge(event) && event.id >= familyOf(context, event).next,
    callFailedBy: ({ event }, params: { cause: "protocol" | "commit" }) =>
      event.type === "CALL_FAILED" && event.cause === params.cause,
  },
});

/** A call's context: the turn's steps before it include the calls before it in the batch (§5.12). */
const callContext = (ctx: ToolContext, index: number): ToolContext =>
  ctx.turn ? { ...ctx, turn: { ...ctx.turn, steps: ctx.turn.steps + index } } : ctx;

/** Every call starts at once, in order; each gets the next Exec id for its first Exec (§4.2, §4.4). */
const startCalls = toolRoundSetup.enqueueActions(({ context, enqueue }) => {
  const owners = new Map(context.execOwners);
  context.calls.forEach((invocation, index) => {
    const reservedExecId = context.nextExecId + index;
    owners.set(reservedExecId, index);
    const ctx = callContext(context.ctx, index);
    enqueue.spawnChild("toolCall", {
      id: callChild(index),
      input: { index, modelCallId: context.modelCallId, invocation, ctx, reservedExecId },
    });
  });
  enqueue.assign({ nextExecId: context.nextExecId + context.calls.length, execOwners: owners });
});

const grantExecId = toolRoundSetup.enqueueActions(({ context, event, enqueue }) => {
  if (event.type !== "EXEC_ID_WANTED") return;
  const execId = context.nextExecId;
  enqueue.assign({
    nextExecId: execId + 1,
    execOwners: new Map(context.execOwners).set(execId, event.index),
  });
  enqueue.sendTo(callChild(event.index), { type: "EXEC_ID_GRANTED", execId });
});

const grantInteractionId = toolRoundSetup.enqueueActions(({ context, event, enqueue }) => {
  if (event.type !== "INTERACTION_ID_WANTED") return;
  const interactionId = context.nextInteractionId;
  enqueue.assign({
    nextInteractionId: interactionId + 1,
    interactionOwners: new Map(context.interactionOwners).set(interactionId, event.index),
  });
  enqueue.sendTo(callChild(event.index), { type: "INTERACTION_ID_GRANTED", interactionId });
});

const routeToCall = toolRoundSetup.enqueueActions(({ context, event, enqueue, self }) => {
  const owner = isClientBridge(event) ? familyOf(context, event).owners.get(event.id) : undefined;
  const child = owner === undefined ? undefined : self.getSnapshot().children[callChild(owner)];
  if (child) enqueue.sendTo(child, event);
});

/** Aborts every call still live; each aborts its own running Exec, never a taken one (§3.5, §5.5). */
const abortCalls = toolRoundSetup.enqueueActions(({ enqueue, self }) => {
  for (const [id, child] of Object.entries(self.getSnapshot().children))
    if (child && id.startsWith("call-")) enqueue.sendTo(child, { type: "ABORT" });
});

/** A client message by its id: to its call; a late tail of an earlier round is dropped; any other id is an error. */
const clientExecRouting = [
  { guard: "ownedId" as const, actions: routeToCall },
  { guard: "earlierId" as const },
  {
    guard: "unknownId" as const,
    target: "#toolRound.failed",
    actions: [
      abortCalls,
      {
        type: "protocolError" as const,
        params: ({ context, event }: { context: ToolRoundContext; event: ToolRoundEvent }) => ({
          message: isClientBridge(event) ? `${familyOf(context, event).what} ${event.id}` : "?",
        }),
      },
    ],
  },
];

const clientExecHandlers = (routing: typeof clientExecRouting | typeof beforeCalls) => ({
  CLIENT_EXEC: routing,
  CLIENT_STREAM_CLOSE: routing,
  CLIENT_THROW: routing,
  CLIENT_INTERACTION: routing,
});
/** Before the calls start no id of this round is out yet. */
const beforeCalls = clientExecRouting.slice(1);

/** A state that publishes one checkpoint of the round, then moves on; a refused checkpoint ends the round. */
function checkpointState(kind: "staged" | "settled", next: "running" | "settled") {
  const routing = kind === "staged" ? beforeCalls : clientExecRouting;
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
        {
          target: next,
          actions: [
            { type: "takeKvIds", params: ({ event }) => ({ nextKvId: event.output.nextKvId }) },
            { type: "takeTurn", params: ({ event }) => ({ output: event.output }) },
          ],
        },
      ],
    },
    on: { ...clientExecHandlers(routing), CANCEL: { target: "canceled", actions: "markCanceled" } },
  });
}

export const toolRoundMachine = toolRoundSetup.createMachine({
  description:
    "The tool calls of one model response. A staged checkpoint is published before any tool runs; then every " +
    "call runs as its own ToolCall child, which commits its result durably before its tool_call_completed; once " +
    "every call has completed a settled checkpoint is published, and only then does the next model call start. " +
    "Client Exec messages go to the call that owns the Exec id. A call that fails (protocol error or failed " +
    "commit), an Exec id the request never issued, a refused checkpoint or a cancel ends the round, and every " +
    "call still live aborts its running Exec (never a backgrounded shell).",
  id: "toolRound",
  context: ({ input }) => ({
    modelCallId: input.modelCallId,
    ctx: input.ctx,
    calls: input.calls,
    completed: 0,
    nextExecId: input.execIdBase,
    nextInteractionId: input.interactionIdBase,
    nextKvId: input.kvIdBase,
    execOwners: new Map(),
    interactionOwners: new Map(),
    outcome: { kind: "ok" },
    mode: undefined,
  }),
  initial: "staging",
  states: {
    staging: checkpointState("staged", "running"),
    running: {
      entry: startCalls,
      on: {
        ...clientExecHandlers(clientExecRouting),
        EXEC_ID_WANTED: { actions: grantExecId },
        INTERACTION_ID_WANTED: { actions: grantInteractionId },
        CALL_COMPLETED: { actions: ["countCompleted", "refreshMcp"] },
        CALL_FAILED: [
          {
            guard: { type: "callFailedBy", params: { cause: "protocol" } },
            target: "failed",
            actions: [abortCalls, { type: "protocolError", params: ({ event }) => ({ message: event.message }) }],
          },
          {
            guard: { type: "callFailedBy", params: { cause: "commit" } },
            target: "failed",
            actions: [abortCalls, { type: "checkpointFailed", params: ({ event }) => ({ message: event.message }) }],
          },
        ],
        CANCEL: { target: "canceled", actions: [abortCalls, "markCanceled"] },
      },
      always: { guard: "allCallsCompleted", target: "settling" },
    },
    settling: checkpointState("settled", "settled"),
    settled: { type: "final" },
    failed: { type: "final" },
    canceled: { type: "final" },
  },
  output: ({ context }) => ({
    outcome: context.outcome,
    nextExecId: context.nextExecId,
    nextInteractionId: context.nextInteractionId,
    nextKvId: context.nextKvId,
    ctx: context.ctx,
    ...(context.mode ? { mode: context.mode } : {}),
  }),
});
