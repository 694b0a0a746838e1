import { dirname, join } from "node:path";
import * as aepLedger from "./aep-ledger.js";
import type { AepInputRecord, DeliveryStatus, RecordInputResult, RuntimeStatus } from "./aep-ledger.js";
import * as aepEvents from "./aep-events.js";
import type { EventLogBounds, LoggedEvent } from "./aep-events.js";
import * as aepSessions from "./aep-sessions.js";
import type { AepSessionRecord, AepSessionUpdate } from "./aep-sessions.js";
import * as blobs from "./blobs.js";
import { type ConversationSummary, listConversations } from "./conversation-list.js";
import type { BlobPut } from "../cursor/blob-graph.js";
import * as conversations from "./conversations.js";
import * as routes from "./routes.js";
import type { ConversationRoute } from "./routes.js";
import type { CheckpointCommit, ConversationHead } from "./conversations.js";
import { prepareDataDir } from "./data-dir.js";
import { openDb, writer } from "./db.js";
import type { GcResult } from "./gc.js";
import * as messages from "./messages.js";
import type { NewMessage, StoredMessage } from "./messages.js";
import { beginRun, type RunStart } from "./run-start.js";
import * as runs from "./runs.js";
import type { NewRun, RunOutcome, RunRecord } from "./runs.js";
import { addUsage, type UsageTotals, usageSince } from "./usage.js";

export { BlobIntegrityError } from "./blobs.js";
export { DataDirError } from "./data-dir.js";
export type { AepInputRecord, DeliveryStatus, RecordInputResult, RuntimeStatus } from "./aep-ledger.js";
export type { AepSessionRecord, AepSessionState, AepSessionUpdate } from "./aep-sessions.js";
export type { EventLogBounds, LoggedEvent } from "./aep-events.js";
export type { CheckpointCommit, ConversationHead } from "./conversations.js";
export type { ConversationRoute } from "./routes.js";
export type { GcResult } from "./gc.js";
export { StaleCheckpointError } from "./conversations.js";
export type { MessageOrigin, NewMessage, StoredMessage } from "./messages.js";
export type { RunStart } from "./run-start.js";
export type { NewRun, RunOutcome, RunRecord, RunStatus, RunUsage, TerminalRunStatus } from "./runs.js";
export type { ConversationSummary } from "./conversation-list.js";
export { type UsageRecord, type UsageTotals, usageDay } from "./usage.js";

/** The database file inside a data dir. */
export const DB_FILENAME = "byok.sqlite3";

export interface Store {
  close(): Promise<void>;
  putBlobs(blobs: BlobPut[]): Promise<void>;
  getBlob(id: Uint8Array): Promise<Uint8Array | undefined>;
  /** Several blobs in the order asked (undefined where absent). */
  getBlobs(ids: Uint8Array[]): Promise<Array<Uint8Array | undefined>>;
  /** The subset of `ids` the store does not hold, in the given order. */
  missingBlobs(ids: Uint8Array[]): Promise<Uint8Array[]>;
  /** Blobs, edges and the head switch (revision + 1) in one immediate transaction (docs/protocol/cursor-run.md
   * §6.2–§6.3). */
  commitCheckpoint(c: CheckpointCommit): Promise<{ revision: number }>;
  getHead(conversationId: string): Promise<ConversationHead | undefined>;
  /** Appends in order in one immediate transaction; returns the assigned seqs. */
  appendMessages(conversationId: string, runId: string, msgs: NewMessage[]): Promise<number[]>;
  /** Exactly-once runtime message (docs/protocol/cursor-run.md §8.6); a repeat returns the stored body with
   * appended=false. */
  appendRuntimeMessageOnce(
    conversationId: string,
    runId: string,
    eventId: string,
    body: string,
    /** The run's next provider call, persisted with the message (docs/protocol/cursor-run.md §6.5). */
    providerCallIndex?: number,
  ): Promise<{ body: string; appended: boolean }>;
  loadMessages(conversationId: string): Promise<StoredMessage[]>;
  /**
   * A local run's first commit: its row, its conversation's route and its user message's anchor, the checkpoint the
   * message was first sent on (docs/protocol/cursor-run.md §12.1), which it returns.
   */
  beginRun(start: RunStart): Promise<Uint8Array | undefined>;
  /** A reused runId (request_id reuse) resets the row to running. */
  createRun(r: NewRun): Promise<void>;
  /** Persist before the provider HTTP call (docs/protocol/cursor-run.md §6.5); throws when the run is unknown or
   * terminal. */
  setProviderCallIndex(runId: string, index: number): Promise<void>;
  /** Only the first terminal commit counts: true when this call made it, false when the run already ended. */
  finishRun(runId: string, outcome: RunOutcome): Promise<boolean>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  /** Deletes blobs created before the time (Unix ms) that no head or message reaches (docs/protocol/cursor-run.md
   * §6.6). */
  collectBlobs(createdBefore: number): Promise<GcResult>;
  /** Where the conversation's last run was served; a run_request naming no model goes there too. */
  getConversationRoute(conversationId: string): Promise<ConversationRoute | undefined>;
  setConversationRoute(conversationId: string, route: ConversationRoute): Promise<void>;
  /** Newest activity first; `total` counts every conversation (docs/status-api.md §3). */
  listConversations(page: { limit: number; offset: number }): Promise<{ total: number; items: ConversationSummary[] }>;
  /** Adds usage totals to their (front door, model, UTC day) rows, in one commit. */
  addUsage(rows: readonly UsageTotals[]): Promise<void>;
  /** Usage rows from `sinceDay` (YYYY-MM-DD) on, newest day first, at most `limit`. */
  usageSince(sinceDay: string, limit: number): Promise<UsageTotals[]>;
  aep: AepStore;
}

/** AEP v1 sessions and their input ledger (store/aep-sessions.ts, store/aep-ledger.ts). */
export interface AepStore {
  createSession(s: AepSessionRecord): Promise<void>;
  getSession(sessionId: string): Promise<AepSessionRecord | undefined>;
  findSessionByKey(sessionKey: string): Promise<AepSessionRecord | undefined>;
  updateSession(sessionId: string, update: AepSessionUpdate): Promise<void>;
  deleteSession(sessionId: string): Promise<void>;
  /** The accepted root row, written before the worker sees the input; or the row already there. */
  recordInput(
    r: Pick<AepInputRecord, "sessionId" | "clientMessageId" | "executionId" | "payloadHash">,
  ): Promise<RecordInputResult>;
  getInput(sessionId: string, clientMessageId: string): Promise<AepInputRecord | undefined>;
  setDelivery(executionId: string, status: Exclude<DeliveryStatus, "accepted">, errorCode?: string): Promise<void>;
  setRuntime(executionId: string, status: RuntimeStatus, errorCode?: string): Promise<void>;
  /** At start-up: nothing runs any more, so in-flight facts become idle / unknown. */
  settleAfterRestart(): Promise<void>;
  /** The durable event log (store/aep-events.ts): appended in seq order, read after a seq, pruned to its bounds. */
  appendEvents(sessionId: string, events: readonly LoggedEvent[]): Promise<void>;
  eventsAfter(sessionId: string, afterSeq: number, limit: number): Promise<LoggedEvent[]>;
  pruneEvents(sessionId: string, bounds: EventLogBounds): Promise<void>;
}

export type StoreLocation = { dataDir: string } | { filename: string };

export interface StoreOptions {
  /** Receives every SQL statement sent, BEGIN/COMMIT included, and whether it runs inside a transaction
   * (diagnostics; never logs bound values). */
  onQuery?: (sql: string, inTransaction: boolean) => void;
}

/**
 * Opens (creating the directory and file if needed) and migrates the SQLite store. A directory that cannot hold it
 * fails at once with a DataDirError naming the directory and the reason.
 */
export async function openStore(opts: StoreLocation & StoreOptions): Promise<Store> {
  const filename = "dataDir" in opts ? join(opts.dataDir, DB_FILENAME) : opts.filename;
  await prepareDataDir(dirname(filename));
  const db = await openDb(filename, { onQuery: opts.onQuery });
  const write = writer(db, opts.onQuery);
  return {
    close: () => db.destroy(),
    putBlobs: (b) => blobs.putBlobs(write, b),
    getBlob: (id) => blobs.getBlob(db, id),
    getBlobs: (ids) => blobs.getBlobs(db, ids),
    missingBlobs: (ids) => blobs.missingBlobs(db, ids),
    commitCheckpoint: (c) => conversations.commitCheckpoint(write, c),
    getHead: (id) => conversations.getHead(db, id),
    appendMessages: (c, r, m) => messages.appendMessages(write, c, r, m),
    appendRuntimeMessageOnce: (c, r, e, b, i) => messages.appendRuntimeMessageOnce(write, c, r, e, b, i),
    loadMessages: (c) => messages.loadMessages(db, c),
    beginRun: (start) => beginRun(write, start),
    createRun: (r) => write((tx) => runs.createRun(tx, r)),
    setProviderCallIndex: (r, i) => write((tx) => runs.setProviderCallIndex(tx, r, i)),
    finishRun: (r, o) => write((tx) => runs.finishRun(tx, r, o)),
    getRun: (r) => runs.getRun(db, r),
    // Loaded when the first sweep runs: it decodes checkpoints, and the Connect schemas are costly to load at start.
    collectBlobs: async (before) => (await import("./gc.js")).collectBlobs(db, before),
    getConversationRoute: (c) => routes.getConversationRoute(db, c),
    setConversationRoute: (c, r) => write((tx) => routes.setConversationRoute(tx, c, r)),
    listConversations: (page) => listConversations(db, page),
    addUsage: (rows) => write((tx) => addUsage(tx, rows)),
    usageSince: (day, limit) => usageSince(db, day, limit),
    aep: {
      createSession: (r) => aepSessions.createAepSession(db, r),
      getSession: (id) => aepSessions.getAepSession(db, id),
      findSessionByKey: (k) => aepSessions.findAepSessionByKey(db, k),
      updateSession: (id, u) => aepSessions.updateAepSession(db, id, u),
      deleteSession: (id) => aepSessions.deleteAepSession(db, id),
      recordInput: (r) => aepLedger.recordInput(db, r),
      getInput: (s, c) => aepLedger.getInput(db, s, c),
      setDelivery: (e, st, c) => aepLedger.setDelivery(db, e, st, c),
      setRuntime: (e, st, c) => aepLedger.setRuntime(db, e, st, c),
      appendEvents: (id, events) => aepEvents.appendAepEvents(db, id, events),
      eventsAfter: (id, seq, limit) => aepEvents.aepEventsAfter(db, id, seq, limit),
      pruneEvents: (id, bounds) => aepEvents.pruneAepEvents(db, id, bounds),
      settleAfterRestart: async () => {
        await aepSessions.settleAepSessionsAfterRestart(db);
        await aepLedger.settleInputsAfterRestart(db);
      },
    },
  };
}
