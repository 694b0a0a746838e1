// Supplies the runs' side effects to the machine graph with .provide(), once per gateway: every machine reaches the
// world only through these closures, which find their run's session and outputs through the run's actor system.
// Providing per run rebuilt the six machines' state nodes and transition tables for every run (issue 17: ~5 % of
// the gateway's CPU under 200 concurrent runs).
import { type Actor, createActor, fromCallback, fromPromise } from "xstate";
import type { AgentServerMessage } from "../proto/gen/agent/v1/agent_pb.js";
import { checkpointMachine, type CheckpointKind, type CheckpointWrite } from "../machines/checkpoint.js";
import { modelCallMachine, type ModelCallEvent } from "../machines/model-call.js";
import type { ModelCallInput } from "../machines/model-call-contract.js";
import { pendingExecMachine } from "../machines/pending-exec.js";
import { runMachine, type RunEnd, type RunInput } from "../machines/run.js";
import { toolRoundMachine } from "../machines/tool-round.js";
import { toolCallMachine, type CommitResultInput } from "../machines/tool-call.js";
import { frames } from "../cursor/frames.js";
import type { ServiceRequest } from "../cursor/tools/types.js";
import { passEvents } from "./pass-events.js";
import type { RunSession } from "./run-session.js";
import type { TimerConfig } from "./config.js";
import type { FrameOutputs } from "./stream-entry.js";

/** A run's actor system (shared by the run actor and all its children), used only as the key of its wiring. */
type RunSystem = object;

export interface RunOutputs extends FrameOutputs {
  finish(end: RunEnd): void;
}

interface RunWiring {
  session: RunSession;
  out: RunOutputs;
}

/** Each run's actor system (its run actor and every child) → what that run's side effects act on. */
const wirings = new WeakMap<RunSystem, RunWiring>();

function wiringOf(system: RunSystem): RunWiring {
  const wiring = wirings.get(system);
  if (!wiring) throw new Error("a run machine acted outside a run created by createRunActor");
  return wiring;
}

const sessionOf = (system: RunSystem) => wiringOf(system).session;

/** Store and driver errors can embed SQL with bound values: only their cause may reach a client-visible message. */
function concise<T>(work: () => Promise<T>): Promise<T> {
  return work().catch((e: unknown) => {
    const message = e instanceof Error ? e.message : String(e);
    const sqlite = message.indexOf("SQLITE_");
    throw sqlite >= 0 ? new Error(`store error: ${message.slice(sqlite)}`) : e;
  });
}

export type WiredRunMachine = ReturnType<typeof buildRunMachine>;

/** The run machine with every side effect supplied; one per gateway (its timers are the config's). */
export function buildRunMachine(timers: TimerConfig) {
  const emitFrame = ({ system }: { system: RunSystem }, params: { message: AgentServerMessage }) =>
    wiringOf(system).out.emit(params.message);
  const checkpoint = checkpointMachine.provide({
    actors: {
      build: fromPromise(({ input, system }: { input: { kind: CheckpointKind }; system: RunSystem }) =>
        concise(() => sessionOf(system).buildCheckpoint(input.kind)),
      ),
      commit: fromPromise(({ input, system }: { input: CheckpointWrite; system: RunSystem }) =>
        concise(() => sessionOf(system).commitCheckpoint(input)),
      ),
    },
    actions: { emitFrame },
    ...(timers.kvReplyDeadlineMs ? { delays: { kvAckDeadline: timers.kvReplyDeadlineMs } } : {}),
  });
  return runMachine.provide({
    actors: {
      findMissingBlobs: fromPromise(({ system }) => concise(() => sessionOf(system).findMissingBlobs())),
      measureContext: fromPromise(async ({ system }) => sessionOf(system).measureContext()),
      prepare: fromPromise(
        ({
          input,
          system,
        }: {
          input: { fetched: Array<{ blobId: Uint8Array; data: Uint8Array }> };
          system: RunSystem;
        }) => concise(() => sessionOf(system).prepare(input.fetched)),
      ),
      modelCall: modelCallMachine.provide({
        actors: { providerStream: providerStream(wiringOf) },
        actions: { emitFrame },
      }),
      toolRound: toolRoundMachine.provide({
        actors: {
          checkpoint,
          toolCall: toolCallMachine.provide({
            actors: {
              pendingExec: pendingExecMachine.provide({
                actions: { sendAbort: ({ system }, { id }) => wiringOf(system).out.emit(frames.execAbort(id)) },
              }),
              commitResult: fromPromise(({ input, system }: { input: CommitResultInput; system: RunSystem }) =>
                concise(() => sessionOf(system).commitResult(input)),
              ),
              callService: fromPromise(
                ({ input, signal, system }: { input: ServiceRequest; signal: AbortSignal; system: RunSystem }) =>
                  sessionOf(system).toolServices.call(input, signal),
              ),
            },
            actions: { emitFrame },
          }),
        },
      }),
      checkpoint,
    },
    actions: {
      emitFrame,
      recordModelCall: ({ system }, { output }) =>
        sessionOf(system).recordModelCall(output.ok ? output.assistant : undefined, output.usage),
      recordSummary: ({ system }, { output }) =>
        sessionOf(system).recordSummary(output.ok ? output.assistant.text : undefined, output.usage),
      finish: ({ system }, { end }) => wiringOf(system).out.finish(end),
    },
    ...(timers.kvReplyDeadlineMs ? { delays: { kvGetDeadline: timers.kvReplyDeadlineMs } } : {}),
  });
}

/** One run's actor (not started), its machines acting on this session and these outputs. */
export function createRunActor(
  machine: WiredRunMachine,
  session: RunSession,
  out: RunOutputs,
  input: RunInput,
): Actor<WiredRunMachine> {
  const actor = createActor(machine, { input });
  wirings.set(actor.system, { session, out });
  return actor;
}

/**
 * The provider pass as a callback actor: stopping the actor aborts the HTTP request, headers or body
 * (docs/protocol/cursor-run.md §7.3). Its events reach the ModelCall through passEvents: a text block's deltas are
 * shown from here, and a stopped pass drops whatever is still held.
 */
export function providerStream(
  wiringOf: (system: RunSystem) => { session: Pick<RunSession, "stream">; out: Pick<RunOutputs, "emitTextDelta"> },
) {
  return fromCallback<ModelCallEvent, ModelCallInput>(({ sendBack, input, system }) => {
    const { session, out } = wiringOf(system);
    const abort = new AbortController();
    const events = passEvents({
      send: sendBack,
      ...(input.purpose === "summary" ? {} : { show: out.emitTextDelta }),
    });
    void (async () => {
      try {
        await session.stream(input.callIndex, abort.signal, events.push, input.purpose);
        events.flush();
        sendBack({ type: "STREAM_END" });
      } catch (e) {
        events.flush();
        sendBack({
          type: "PROVIDER_ERROR",
          message: e instanceof Error ? e.message : String(e),
          aborted: abort.signal.aborted,
        });
      }
    })();
    return () => {
      events.drop();
      abort.abort();
    };
  });
}
