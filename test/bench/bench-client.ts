// A lean Cursor-like client for the bench: one run per call, over the harness's own wire helpers (RunSSE and
// BidiAppend via connect-wire, Exec answers via client-workspace). Unlike test/support's CursorClient it keeps no
// frame log and checks no invariants — 20,000 deltas or 200 runs at once must cost the client as little as
// possible — but it stamps what the figures need on the shared monotonic clock: each text_delta's arrival, and
// per tool round the timeline from the last tool result to the settled checkpoint.
import { create } from "@bufbuild/protobuf";
import { randomUUID } from "node:crypto";
import {
  AgentClientMessageSchema,
  AgentMode,
  AgentRunRequestSchema,
  type AgentServerMessage,
  type ConversationStateStructure,
  ConversationStateStructureSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { ClientMessageInit } from "../support/client-responder.js";
import { answerExec, unscriptedShell, type Workspace } from "../support/client-workspace.js";
import { openRunSse, postBidiAppend } from "../support/connect-wire.js";
import { blobHex, type RunEnd } from "../support/observed-frames.js";
import { DELTA_TEXT, directiveText, type StreamDirective } from "./fakes-protocol.js";
import { nowMs } from "./stats.js";

export interface TurnOptions {
  baseUrl: string;
  providerUrl: string;
  conversationId: string;
  directive: StreamDirective;
  workspace: Workspace;
  /** The checkpoint of the conversation's previous turn. */
  checkpoint?: ConversationStateStructure;
  /** The client's blob store across turns (answers the server's KV GETs). */
  blobs?: Map<string, Uint8Array>;
  /** A model the gateway has configured (default BENCH_MODEL, served by the credentials sent with the run). */
  modelId?: string;
}

export interface TurnRecord {
  end: RunEnd;
  /** nowMs() of every text_delta frame's arrival. */
  deltaArrivals: number[];
  /** Text deltas in each of those frames (a server may merge the deltas of one provider read). */
  frameDeltas: number[];
  /** Text deltas received, counted from the characters (a server could merge deltas into fewer frames). */
  deltas: number;
  kvSets: number;
  kvSetBytes: number;
  checkpoint: ConversationStateStructure | undefined;
  /**
   * Per tool round, ms from the last tool result leaving the client to the settled checkpoint's arrival, minus the
   * client's own part (from its first kv_set received to its last ACK sent): the part before the SETs and the part
   * after the last ACK.
   */
  settledCheckpoints: Array<{ beforeSetsMs: number; afterAcksMs: number }>;
}

export const BENCH_MODEL = "gpt-bench";

export function runTurn(o: TurnOptions): Promise<TurnRecord> {
  const record: TurnRecord = {
    end: { ok: true },
    deltaArrivals: [],
    frameDeltas: [],
    deltas: 0,
    kvSets: 0,
    kvSetBytes: 0,
    checkpoint: undefined,
    settledCheckpoints: [],
  };
  const requestId = randomUUID();
  const blobs = o.blobs ?? new Map<string, Uint8Array>();
  let chain: Promise<unknown> = Promise.resolve();
  let seqno = 0n;
  const send = (message: ClientMessageInit, onSent?: () => void): Promise<unknown> => {
    const next = ++seqno;
    chain = chain.then(() =>
      postBidiAppend(
        o.baseUrl,
        { requestId, seqno: next, message: create(AgentClientMessageSchema, { message }) },
        onSent,
      ),
    );
    return chain;
  };
  let textChars = 0;
  // The settled-checkpoint clock of the current tool round (undefined outside one).
  let round: { resultSentAt: number; firstKvAt?: number; lastAckSentAt?: number } | undefined;

  const onMessage = (message: AgentServerMessage): void => {
    const m = message.message;
    if (m.case === "interactionUpdate" && m.value.message.case === "textDelta") {
      const chars = m.value.message.value.text.length;
      record.deltaArrivals.push(nowMs());
      record.frameDeltas.push(chars / DELTA_TEXT.length);
      textChars += chars;
      return;
    }
    if (m.case === "kvServerMessage") {
      const kv = m.value;
      if (kv.message.case === "setBlobArgs") {
        const { blobId, blobData } = kv.message.value;
        if (round && round.firstKvAt === undefined) round.firstKvAt = nowMs();
        record.kvSets++;
        record.kvSetBytes += blobData.byteLength;
        blobs.set(blobHex(blobId), blobData);
        const r = round;
        void send(
          { case: "kvClientMessage", value: { id: kv.id, message: { case: "setBlobResult", value: {} } } },
          () => {
            if (r) r.lastAckSentAt = nowMs();
          },
        );
      } else if (kv.message.case === "getBlobArgs") {
        const blobData = blobs.get(blobHex(kv.message.value.blobId));
        void send({
          case: "kvClientMessage",
          value: { id: kv.id, message: { case: "getBlobResult", value: { blobData } } },
        });
      }
      return;
    }
    if (m.case === "execServerMessage") {
      const id = m.value.id;
      const answer = answerExec(m.value, o.workspace, unscriptedShell);
      if (!answer) throw new Error(`bench client cannot answer ${m.value.message.case}`);
      for (const step of answer.messages) {
        void send(
          { case: "execClientMessage", value: { id, message: step.message } },
          () => (round = { resultSentAt: nowMs() }),
        );
      }
      void send({ case: "execClientControlMessage", value: { message: { case: "streamClose", value: { id } } } });
      return;
    }
    if (m.case === "conversationCheckpointUpdate") {
      const at = nowMs();
      record.checkpoint = m.value;
      if (round) {
        const { resultSentAt, firstKvAt, lastAckSentAt } = round;
        record.settledCheckpoints.push(
          firstKvAt === undefined
            ? { beforeSetsMs: at - resultSentAt, afterAcksMs: 0 }
            : { beforeSetsMs: firstKvAt - resultSentAt, afterAcksMs: at - (lastAckSentAt ?? firstKvAt) },
        );
        round = undefined;
      }
    }
  };

  return new Promise<TurnRecord>((resolve) => {
    const done = (end: RunEnd) => {
      record.end = end;
      record.deltas = Math.round(textChars / DELTA_TEXT.length);
      void chain.then(() => resolve(record));
    };
    const connection = openRunSse(
      o.baseUrl,
      requestId,
      { acceptGzip: true },
      {
        message: onMessage,
        end: done,
        broken: done,
        violation: () => {},
      },
    );
    void connection.headers.then(() => send({ case: "runRequest", value: runRequest(o) }));
  });
}

function runRequest(o: TurnOptions) {
  const root = o.workspace.root;
  const requestContext = {
    env: {
      osVersion: "linux 6.1.0",
      workspacePaths: [root],
      shell: "/bin/bash",
      timeZone: "UTC",
      projectFolder: root,
      terminalsFolder: `${root}/.terminals`,
    },
  };
  return create(AgentRunRequestSchema, {
    conversationId: o.conversationId,
    conversationState: o.checkpoint ?? create(ConversationStateStructureSchema),
    action: {
      action: {
        case: "userMessageAction",
        value: {
          userMessage: {
            text: `Please go on. ${directiveText(o.directive)}`,
            messageId: randomUUID(),
            mode: AgentMode.AGENT,
          },
          requestContext,
        },
      },
    },
    modelDetails: { modelId: o.modelId ?? BENCH_MODEL },
    requestedModel: {
      modelId: o.modelId ?? BENCH_MODEL,
      credentials: { case: "apiKeyCredentials", value: { apiKey: "sk-bench", baseUrl: o.providerUrl } },
    },
  });
}
