// The assembled Run + ModelCall + ToolRound + PendingExec + Checkpoint machines (real machines, real actions), with
// the engine's side effects replaced by small in-memory fakes: a provider the test scripts event by event, result
// commits and checkpoint builds that succeed, and a log of every frame the run emits and every client answer the
// test gives, in order. Used by the fast-check property test.
import { create } from "@bufbuild/protobuf";
import { createActor, fromCallback, fromPromise, SimulatedClock, type Actor } from "xstate";
import {
  ConversationStateStructureSchema,
  ToolCallSchema,
  type AgentServerMessage,
} from "../../../proto/gen/agent/v1/agent_pb.js";
import { checkpointMachine, type CheckpointKind, type CheckpointPlan } from "../../../machines/checkpoint.js";
import { modelCallMachine, type ModelCallEvent } from "../../../machines/model-call.js";
import { pendingExecMachine } from "../../../machines/pending-exec.js";
import { runMachine, type PreparedRun, type RunEnd, type RunEvent } from "../../../machines/run.js";
import { toolRoundMachine } from "../../../machines/tool-round.js";
import { toolCallMachine, type CommitResultInput } from "../../../machines/tool-call.js";
import { endStreamFor } from "../../../engine/run-end.js";
import { frames } from "../../../cursor/frames.js";
import type { ObservedFrame } from "../../support/observed-frames.js";

export type LogEntry =
  | { kind: "frame"; message: AgentServerMessage; afterFinish: boolean }
  | { kind: "client"; event: RunEvent }
  | { kind: "provider"; event: ModelCallEvent }
  | { kind: "finish"; end: RunEnd };

const prepared: PreparedRun = { toolNames: ["Read"], toolContext: { conversationId: "c" } };

export class AssembledRun {
  readonly log: LogEntry[] = [];
  readonly clock = new SimulatedClock();
  readonly actor: Actor<typeof runMachine>;
  private provider: ((e: ModelCallEvent) => void) | undefined;
  private blobCounter = 0;

  constructor() {
    const emitFrame = (_: unknown, { message }: { message: AgentServerMessage }) =>
      void this.log.push({ kind: "frame", message, afterFinish: this.finished });
    const checkpoint = checkpointMachine.provide({
      actors: {
        build: fromPromise(async ({ input }: { input: { kind: CheckpointKind } }) => this.plan(input.kind)),
        commit: fromPromise(async () => {}),
      },
      actions: { emitFrame },
    });
    const machine = runMachine.provide({
      actors: {
        findMissingBlobs: fromPromise(async (): Promise<Uint8Array[]> => []),
        prepare: fromPromise(async () => prepared),
        modelCall: modelCallMachine.provide({
          actors: {
            providerStream: fromCallback<ModelCallEvent>(({ sendBack }) => {
              this.provider = sendBack;
              return () => void (this.provider = undefined);
            }) as never,
          },
          actions: { emitFrame },
        }),
        toolRound: toolRoundMachine.provide({
          actors: {
            checkpoint,
            toolCall: toolCallMachine.provide({
              actors: {
                pendingExec: pendingExecMachine.provide({
                  actions: { sendAbort: (_, { id }) => emitFrame(undefined, { message: frames.execAbort(id) }) },
                }),
                commitResult: fromPromise(async ({ input }: { input: CommitResultInput }) => ({
                  callIndex: input.callIndex,
                  toolCall: create(ToolCallSchema, {}),
                })),
              },
              actions: { emitFrame },
            }),
          },
        }),
        checkpoint,
      },
      actions: {
        emitFrame,
        recordModelCall: () => {},
        finish: (_, { end }) => void this.log.push({ kind: "finish", end }),
      },
    });
    this.actor = createActor(machine, { input: { requestId: "r", conversationId: "c" }, clock: this.clock });
  }

  get finished(): boolean {
    return this.log.some((e) => e.kind === "finish");
  }

  /** A provider call is streaming (its callback actor is live). */
  get providerLive(): boolean {
    return this.provider !== undefined;
  }

  start(): Promise<void> {
    this.actor.start();
    return settle();
  }

  async fromProvider(event: ModelCallEvent): Promise<void> {
    if (!this.provider) return;
    this.log.push({ kind: "provider", event });
    this.provider(event);
    await settle();
  }

  async fromClient(event: RunEvent): Promise<void> {
    this.log.push({ kind: "client", event });
    this.actor.send(event);
    await settle();
  }

  async advance(ms: number): Promise<void> {
    this.clock.increment(ms);
    await settle();
  }

  /** Ids of exec requests and blob SETs the run has sent, in order. */
  sent(kind: "exec" | "kvSet"): number[] {
    return this.log.flatMap((e) => {
      if (e.kind !== "frame") return [];
      const m = e.message.message;
      if (kind === "exec" && m.case === "execServerMessage") return [m.value.id];
      if (kind === "kvSet" && m.case === "kvServerMessage" && m.value.message.case === "setBlobArgs")
        return [m.value.id];
      return [];
    });
  }

  /** The frames as a RunSSE subscriber would have seen them, EndStream last (the engine's mapping). */
  observed(): ObservedFrame[] {
    return this.log.flatMap((e, at): ObservedFrame[] => {
      if (e.kind === "frame") return [{ kind: "message", message: e.message, connection: 0, compressed: false, at }];
      if (e.kind !== "finish") return [];
      const end = endStreamFor(e.end);
      return [
        {
          kind: "end",
          connection: 0,
          at,
          end: end.ok ? { ok: true } : { ok: false, code: end.error.code, message: end.error.message },
        },
      ];
    });
  }

  /** Final: turn_ended, staged, settled and the settled one again (docs/protocol/cursor-run.md §10.2–§10.5); a round's:
   * one checkpoint. */
  private plan(kind: CheckpointKind): CheckpointPlan {
    const blob = () => {
      const n = this.blobCounter++;
      return { id: new Uint8Array([0xb1, n]), data: new Uint8Array([n]) };
    };
    const state = (n: number) =>
      frames.checkpoint(create(ConversationStateStructureSchema, { rootPromptMessagesJson: [new Uint8Array([n])] }));
    const settled = state(this.blobCounter);
    return {
      sets: [blob(), blob()],
      publish: kind === "final" ? [frames.turnEnded({}), state(-1 & 0xff), settled, settled] : [settled],
      write: { kind, snapshots: [], messages: [] },
    };
  }
}

/** Lets resolved promises (commits, builds, prepare) deliver their results. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));
