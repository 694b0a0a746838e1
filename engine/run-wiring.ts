// Supplies one run's side effects to the machine graph with .provide(): every machine reaches the world only
// through these closures over the run's session and its RequestStream.
import { fromCallback, fromPromise } from "xstate";
import type { AgentServerMessage } from "../proto/gen/agent/v1/agent_pb.js";
import { checkpointMachine, type CheckpointKind, type CheckpointWrite } from "../machines/checkpoint.js";
import { modelCallMachine, type ModelCallEvent } from "../machines/model-call.js";
import type { ModelCallInput } from "../machines/model-call-contract.js";
import { pendingExecMachine } from "../machines/pending-exec.js";
import { runMachine, type RunEnd } from "../machines/run.js";
import { toolRoundMachine } from "../machines/tool-round.js";
import { toolCallMachine, type CommitResultInput } from "../machines/tool-call.js";
import { frames } from "../cursor/frames.js";
import type { ServiceRequest } from "../cursor/tools/types.js";
import { coalesceDeltas } from "./delta-coalescer.js";
import type { RunSession } from "./run-session.js";
import type { TimerConfig } from "./config.js";

export interface RunOutputs {
  emit(message: AgentServerMessage): void;
  finish(end: RunEnd): void;
}

/** Store and driver errors can embed SQL with bound values: only their cause may reach a client-visible message. */
function concise<T>(work: () => Promise<T>): Promise<T> {
  return work().catch((e: unknown) => {
    const message = e instanceof Error ? e.message : String(e);
    const sqlite = message.indexOf("SQLITE_");
    throw sqlite >= 0 ? new Error(`store error: ${message.slice(sqlite)}`) : e;
  });
}

export function buildRunMachine(session: RunSession, timers: TimerConfig, out: RunOutputs) {
  const emitFrame = (_: unknown, params: { message: AgentServerMessage }) => out.emit(params.message);
  const checkpoint = checkpointMachine.provide({
    actors: {
      build: fromPromise(({ input }: { input: { kind: CheckpointKind } }) =>
        concise(() => session.buildCheckpoint(input.kind)),
      ),
      commit: fromPromise(({ input }: { input: CheckpointWrite }) => concise(() => session.commitCheckpoint(input))),
    },
    actions: { emitFrame },
    ...(timers.kvReplyDeadlineMs ? { delays: { kvAckDeadline: timers.kvReplyDeadlineMs } } : {}),
  });
  return runMachine.provide({
    actors: {
      findMissingBlobs: fromPromise(() => concise(() => session.findMissingBlobs())),
      measureContext: fromPromise(async () => session.measureContext()),
      prepare: fromPromise(({ input }: { input: { fetched: Array<{ blobId: Uint8Array; data: Uint8Array }> } }) =>
        concise(() => session.prepare(input.fetched)),
      ),
      modelCall: modelCallMachine.provide({
        actors: { providerStream: providerStream(session) },
        actions: { emitFrame },
      }),
      toolRound: toolRoundMachine.provide({
        actors: {
          checkpoint,
          toolCall: toolCallMachine.provide({
            actors: {
              pendingExec: pendingExecMachine.provide({
                actions: { sendAbort: (_, { id }) => out.emit(frames.execAbort(id)) },
              }),
              commitResult: fromPromise(({ input }: { input: CommitResultInput }) =>
                concise(() => session.commitResult(input)),
              ),
              callService: fromPromise(({ input, signal }: { input: ServiceRequest; signal: AbortSignal }) =>
                session.toolServices.call(input, signal),
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
      recordModelCall: (_, { output }) =>
        session.recordModelCall(output.ok ? output.assistant : undefined, output.usage),
      recordSummary: (_, { output }) =>
        session.recordSummary(output.ok ? output.assistant.text : undefined, output.usage),
      finish: (_, { end }) => out.finish(end),
    },
    ...(timers.kvReplyDeadlineMs ? { delays: { kvGetDeadline: timers.kvReplyDeadlineMs } } : {}),
  });
}

/**
 * The provider pass as a callback actor: stopping the actor aborts the HTTP request, headers or body
 * (docs/protocol/cursor-run.md §7.3).
 * The deltas of one provider read reach the ModelCall as one event; a stopped pass drops the one still held.
 */
export function providerStream(session: Pick<RunSession, "stream">) {
  return fromCallback<ModelCallEvent, ModelCallInput>(({ sendBack, input }) => {
    const abort = new AbortController();
    const deltas = coalesceDeltas((event) => sendBack({ type: "MODEL", event }));
    void (async () => {
      try {
        for await (const event of session.stream(input.callIndex, abort.signal, input.purpose)) deltas.push(event);
        deltas.flush();
        sendBack({ type: "STREAM_END" });
      } catch (e) {
        deltas.flush();
        sendBack({
          type: "PROVIDER_ERROR",
          message: e instanceof Error ? e.message : String(e),
          aborted: abort.signal.aborted,
        });
      }
    })();
    return () => {
      deltas.drop();
      abort.abort();
    };
  });
}
