// Checkpoint: build the new blobs, SET them to the client, wait for every ACK in the new reference closure, commit
// them to the store with the head switch, and only then publish (docs/protocol/cursor-run.md §5, §5.2, §6.2–§6.3). A
// settled round's plan may come already durable (the round's last tool results committed it, §5.2): then nothing is
// committed between the last ACK and the publish. A refused SET, a missing ACK past the deadline or a failed commit
// ends here as `failed`; nothing referencing an unacknowledged blob is ever published, and no retry under a fresh KV
// id is made.
import { assign, enqueueActions, fromPromise, setup } from "xstate";
import type { AgentServerMessage } from "../proto/gen/agent/v1/agent_pb.js";
import type { CheckpointSnapshot } from "../cursor/checkpoint-builder.js";
import { frames } from "../cursor/frames.js";
import type { TurnFacts } from "../cursor/tools/types.js";
import type { CanonicalMessage } from "../providers/messages.js";

/** `compacted`: the history after a summary replaced its older part (docs/protocol/cursor-run.md §8.10). */
export type CheckpointKind = "staged" | "settled" | "compacted" | "final";

export interface CheckpointInput {
  kind: CheckpointKind;
  kvIdBase: number;
}

/** What the commit step writes: the snapshots' blobs and edges, and the messages the checkpoint makes visible. */
export interface CheckpointWrite {
  kind: CheckpointKind;
  snapshots: readonly CheckpointSnapshot[];
  messages: readonly CanonicalMessage[];
}

/** What the engine's builder produces: blobs the client lacks, the frames to publish once they are safe, and the
 * write that makes them durable (carried by this machine from the build to the commit step). */
export interface CheckpointPlan {
  sets: Array<{ id: Uint8Array; data: Uint8Array }>;
  publish: AgentServerMessage[];
  write: CheckpointWrite;
  /** Frames that go out before the blobs are SET (the final sequence's step_completed). */
  lead?: AgentServerMessage[];
  /** Where the checkpoint leaves the turn (a staged one: what the round's local tools build on). */
  turn?: TurnFacts;
  /** The write is already committed: a settled checkpoint whose transaction also held the round's last tool results
   * (docs/protocol/cursor-run.md §5.2). */
  durable?: boolean;
}

export interface CheckpointOutput {
  ok: boolean;
  error?: string;
  nextKvId: number;
  turn?: TurnFacts;
}

export type CheckpointEvent = { type: "KV_SET_RESULT"; id: number; error?: string };

interface CheckpointContext {
  kind: CheckpointKind;
  nextKvId: number;
  plan: CheckpointPlan | undefined;
  awaiting: readonly number[];
  error: string | undefined;
}

const checkpointSetup = setup({
  types: {
    context: {} as CheckpointContext,
    input: {} as CheckpointInput,
    output: {} as CheckpointOutput,
    events: {} as CheckpointEvent,
  },
  actors: {
    build: fromPromise<CheckpointPlan, { kind: CheckpointKind }>(async ({ input }) => ({
      sets: [],
      publish: [],
      write: { kind: input.kind, snapshots: [], messages: [] },
    })),
    commit: fromPromise<void, CheckpointWrite>(async () => {}),
  },
  actions: {
    emitFrame: (_, _params: { message: AgentServerMessage }) => {},
    acknowledge: assign({
      awaiting: ({ context, event }) => context.awaiting.filter((id) => id !== event.id),
    }),
    fail: assign({ error: (_, params: { error: string }) => params.error }),
  },
  guards: {
    allAcknowledged: ({ context }) => context.awaiting.length === 0,
    durableAndAcknowledged: ({ context }) => context.awaiting.length === 0 && context.plan?.durable === true,
    isRefusal: ({ context, event }) => context.awaiting.includes(event.id) && event.error !== undefined,
    isAwaited: ({ context, event }) => context.awaiting.includes(event.id),
  },
  delays: {
    /** How long the client may take to acknowledge a blob SET (docs/protocol/cursor-run.md §5.2: a configured
     * deadline). */
    kvAckDeadline: 30_000,
  },
});

const sendSets = checkpointSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    for (const message of context.plan?.lead ?? []) enqueue({ type: "emitFrame", params: { message } });
    const sets = context.plan?.sets ?? [];
    sets.forEach((blob, i) => {
      enqueue({ type: "emitFrame", params: { message: frames.kvSet(context.nextKvId + i, blob.id, blob.data) } });
    });
    enqueue.assign({ awaiting: sets.map((_, i) => context.nextKvId + i), nextKvId: context.nextKvId + sets.length });
  }),
);

const publish = checkpointSetup.createAction(
  enqueueActions(({ context, enqueue }) => {
    for (const message of context.plan?.publish ?? []) enqueue({ type: "emitFrame", params: { message } });
  }),
);

export const checkpointMachine = checkpointSetup.createMachine({
  description:
    "Builds the new blobs, SETs them to the client, waits for every acknowledgement in the new reference " +
    "closure (with a deadline), commits blobs, edges and the head switch in one transaction, and only then " +
    "publishes; a plan that is already durable (a settled round's, committed with its last tool results) is " +
    "published right after the last acknowledgement. A refused or unacknowledged SET or a failed commit ends in failed: no checkpoint referencing " +
    "an unacknowledged blob is ever published.",
  id: "checkpoint",
  context: ({ input }) => ({
    kind: input.kind,
    nextKvId: input.kvIdBase,
    plan: undefined,
    awaiting: [],
    error: undefined,
  }),
  initial: "building",
  states: {
    building: {
      invoke: {
        src: "build",
        input: ({ context }) => ({ kind: context.kind }),
        onDone: { target: "setting", actions: assign({ plan: ({ event }) => event.output }) },
        onError: {
          target: "failed",
          actions: {
            type: "fail",
            params: ({ event }) => ({ error: `checkpoint build failed: ${String(event.error)}` }),
          },
        },
      },
    },
    setting: {
      entry: sendSets,
      always: [
        { guard: "durableAndAcknowledged", target: "published" },
        { guard: "allAcknowledged", target: "committing" },
      ],
      on: {
        KV_SET_RESULT: [
          {
            guard: "isRefusal",
            target: "failed",
            actions: {
              type: "fail",
              params: ({ event }) => ({ error: `client refused blob SET ${event.id}: ${event.error}` }),
            },
          },
          { guard: "isAwaited", actions: "acknowledge" },
        ],
      },
      after: {
        kvAckDeadline: {
          target: "failed",
          actions: {
            type: "fail",
            params: ({ context }) => ({
              error: `blob SET not acknowledged in time (kv ids ${context.awaiting.join(", ")})`,
            }),
          },
        },
      },
    },
    committing: {
      invoke: {
        src: "commit",
        input: ({ context }) => context.plan!.write,
        onDone: "published",
        onError: {
          target: "failed",
          actions: {
            type: "fail",
            params: ({ event }) => ({ error: `checkpoint commit failed: ${String(event.error)}` }),
          },
        },
      },
    },
    published: { type: "final", entry: publish },
    failed: { type: "final" },
  },
  output: ({ context }) => ({
    ok: context.error === undefined,
    ...(context.error ? { error: context.error } : {}),
    nextKvId: context.nextKvId,
    ...(context.plan?.turn ? { turn: context.plan.turn } : {}),
  }),
});
