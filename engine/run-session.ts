// The side effects of one run, supplied to the machines with .provide(): provider calls, durable commits and the
// checkpoint graph. It decides nothing about lifecycles — the machines do — it only does what they ask, in order.
import { setImmediate as nextTurn } from "node:timers/promises";
import type { AgentRunRequest, ToolCall } from "../proto/gen/agent/v1/agent_pb.js";
import type { PreparedRun } from "../machines/run.js";
import type { AssistantTurn } from "../machines/model-call.js";
import type { CheckpointKind, CheckpointPlan, CheckpointWrite } from "../machines/checkpoint.js";
import type { CommitResultInput, CommitResultOutput } from "../machines/tool-call.js";
import type { PromptAssets, ModeAssets } from "../prompt/assets.js";
import { projectHistory, type CanonicalMessage } from "../providers/messages.js";
import type { ModelEvent, ModelRequest, ProviderAdapter, ProviderEndpoint, Usage } from "../providers/types.js";
import { addUsage } from "../providers/usage.js";
import { CheckpointBuilder, pendingEntry, type CheckpointSnapshot } from "../cursor/checkpoint-builder.js";
import { frames } from "../cursor/frames.js";
import { tokenBreakdown } from "../cursor/token-breakdown.js";
import { foldProgress } from "../cursor/progress-updates.js";
import { StaleCheckpointError, type NewMessage, type Store } from "../store/index.js";
import type { ModelConfig } from "./config.js";
import type { Logger } from "../log/logger.js";
import { resolveModel, type ResolvedModel } from "./models.js";
import { RunSetupError } from "./run-errors.js";
import { addProjected, admitRequest, appendRuntimeMessage, type ProjectedParts } from "./run-context.js";
import {
  loadHistory,
  actionBlobs,
  pendingRound,
  readRunRequest,
  rootIds,
  type RunRequestFacts,
  turnStart,
} from "./run-setup.js";
import type { HistoryCache } from "./history-cache.js";
import type { ParentLink } from "../transport/agent-backend.js";
import { appendCompletions, runMode, subagentSettings } from "./run-subagent.js";

export interface RunDeps {
  store: Store;
  assets: PromptAssets;
  models: readonly ModelConfig[];
  log: Logger;
  /** Decoded checkpoint histories shared by the runs of this gateway. */
  history: HistoryCache;
  adapterFor(endpoint: ProviderEndpoint): ProviderAdapter;
  /** False once a newer run of the same conversation took over (its late commits must not move the head). */
  isCurrent(): boolean;
}

interface Prepared {
  model: ResolvedModel;
  mode: ModeAssets;
  toolDefinitionsJson: string;
  adapter: ProviderAdapter;
  builder: CheckpointBuilder;
}

type Assistant = Extract<CanonicalMessage, { role: "assistant" }>;
type ToolResult = Extract<CanonicalMessage, { role: "tool" }>;

export class RunSession {
  /** What the run_request says; an edited message's checkpoint is replaced by its anchor before anything is loaded. */
  private facts: RunRequestFacts;
  /** What `prepare` settles for the rest of the run; every later step needs it. */
  private prepared: Prepared | undefined;
  private history: CanonicalMessage[] = [];
  /** The response whose tool round is running; `resumed` when it came from the client's pending checkpoint. */
  private assistant: { message: Assistant; turn: AssistantTurn; resumed?: boolean } | undefined;
  private results: Array<{ message: ToolResult; toolCall: ToolCall }> = [];
  private lastUsage: Usage | undefined;
  private totalUsage: Usage = {};
  private roundCounter = 0;
  /** The provider_call_index last written for this run; -1 (createRun's value) before the first call. */
  private persistedCallIndex = -1;
  /** Tool results waiting to be committed together in one transaction, behind the batch being written. */
  private resultBatch: { messages: ToolResult[]; committed: Promise<void> } | undefined;
  private resultsWritten: Promise<void> = Promise.resolve();
  /** True once this execution owns its runs row: only then may its ending be written there (docs/protocol/cursor-run.md
   * §12.2, run identity). */
  claimed = false;
  /** Every tool call this run has committed a result for (a canceled parent spares the children of these). */
  private readonly completedCalls = new Set<string>();
  /** What the projected history is made of, kept as it grows, for the checkpoint's context breakdown
   * (docs/protocol/cursor-run.md §9). */
  private projected: ProjectedParts = { rules: "", skills: "", mcp: "", subagents: "", conversationCharacters: 0 };

  constructor(
    private readonly deps: RunDeps,
    readonly requestId: string,
    private readonly request: AgentRunRequest,
    /** The parent headers when this run is a subagent's. */
    private readonly parent?: ParentLink,
  ) {
    this.facts = readRunRequest(request);
  }

  get conversationId(): string {
    return this.facts.conversationId;
  }

  /** Once the request is admitted (engine/run-context.ts): the history roots, the turn a resume continues and the blobs
   * the user message refers to that the store lacks; they come from the client (docs/protocol/cursor-run.md §3.5). */
  async findMissingBlobs(): Promise<Uint8Array[]> {
    this.facts = await admitRequest(this.deps, this.facts, this.request, this.requestId);
    const { state, action } = this.facts;
    // Roots the history cache holds decoded are stored (garbage collection clears the cache when it deletes).
    const cached = this.deps.history.prefix(this.conversationId, rootIds(state)).messages.length;
    return this.deps.store.missingBlobs([...state.rootPromptMessagesJson.slice(cached), ...actionBlobs(action)]);
  }

  async prepare(fetched: Array<{ blobId: Uint8Array; data: Uint8Array }>): Promise<PreparedRun> {
    const { store } = this.deps;
    const model = resolveModel(this.deps.models, this.request.requestedModel);
    const mode = runMode(this.deps.assets, this.facts, this.request, this.parent);
    let adapter: ProviderAdapter;
    try {
      adapter = this.deps.adapterFor(model.endpoint);
    } catch (e) {
      throw new RunSetupError((e as Error).message, "failed_precondition");
    }
    if (fetched.length) await store.putBlobs(fetched.map((f) => ({ id: f.blobId, data: f.data })));
    this.history = await loadHistory(store, this.deps.history, this.conversationId, this.facts.state);
    for (const m of this.history) this.account(m);
    await store.createRun({ runId: this.requestId, conversationId: this.conversationId, model: model.model });
    this.claimed = true;
    const env = this.facts.requestContext?.env;
    const prepared: PreparedRun = {
      toolNames: mode.tools.map((t) => t.name),
      toolContext: {
        conversationId: this.conversationId,
        ...(env?.terminalsFolder ? { terminalsFolder: env.terminalsFolder } : {}),
        subagents: subagentSettings(this.request),
      },
    };
    const system: CanonicalMessage = { role: "system", content: mode.systemPrompt };
    const { action } = this.facts;
    // Resume (docs/protocol/cursor-run.md §11): continue the last turn; a pending round runs its tools again before any
    // model call.
    const start = await turnStart(store, action);
    const builder = new CheckpointBuilder(this.facts.state, system, start, this.requestId);
    this.prepared = { model, mode, adapter, builder, toolDefinitionsJson: JSON.stringify(mode.tools) };
    if (action.kind !== "resume") {
      const roots =
        action.kind === "userMessage"
          ? [await appendRuntimeMessage(this.deps, this.facts, action.userMessage, this.request, this.requestId, mode)]
          : await appendCompletions(this.deps, this.facts, this.requestId, action.completions, this.history);
      this.pushHistory(...roots);
      for (const m of roots) builder.addRoot(m);
      return prepared;
    }
    const pending = pendingRound(this.facts.state);
    if (!pending) return prepared;
    this.assistant = { message: pending, turn: { text: pending.text, toolCalls: pending.toolCalls }, resumed: true };
    const resumeRound = pending.toolCalls.map((c) => ({
      callId: c.id,
      modelCallId: `${this.requestId}:resume`,
      name: c.name,
      argumentsJson: c.argumentsJson,
      args: JSON.parse(c.argumentsJson) as Record<string, unknown>,
    }));
    return { ...prepared, resumeRound };
  }

  /** The machines call nothing but findMissingBlobs and prepare before prepare has settled. */
  private get ready(): Prepared {
    if (!this.prepared) throw new Error("the run is not prepared yet");
    return this.prepared;
  }

  /** The replayable request for the next call: the same history always projects to the same request
   * (docs/protocol/cursor-run.md §7.3). */
  modelRequest(): ModelRequest {
    return {
      model: this.ready.model.model,
      system: this.ready.mode.systemPrompt,
      tools: this.ready.mode.tools,
      messages: projectHistory(this.history),
      ...(this.ready.model.maxOutputTokens ? { maxOutputTokens: this.ready.model.maxOutputTokens } : {}),
      ...(this.ready.model.reasoningEffort ? { reasoningEffort: this.ready.model.reasoningEffort } : {}),
    };
  }

  /**
   * The provider pass; provider_call_index is persisted before the HTTP request (docs/protocol/cursor-run.md §6.5), by
   * the settled
   * checkpoint that let this call start when it could carry it, else here.
   */
  async *stream(callIndex: number, signal: AbortSignal): AsyncIterable<ModelEvent> {
    // The settled checkpoint just published leaves on the wire before this call's request is compiled and sent.
    if (this.persistedCallIndex === callIndex) await nextTurn();
    const request = this.modelRequest();
    if (this.persistedCallIndex !== callIndex) await this.deps.store.setProviderCallIndex(this.requestId, callIndex);
    this.persistedCallIndex = callIndex;
    this.deps.log.info("provider call started", {
      request_id: this.requestId,
      conversation_id: this.conversationId,
      call_index: callIndex,
      model: request.model,
      message_count: request.messages.length,
    });
    yield* this.ready.adapter.stream(request, signal);
  }

  recordModelCall(turn: AssistantTurn | undefined, usage: Usage | undefined): void {
    this.deps.log.info("provider call completed", {
      request_id: this.requestId,
      ok: turn !== undefined,
      tool_count: turn?.toolCalls.length ?? 0,
      input_tokens: usage?.inputTokens,
      output_tokens: usage?.outputTokens,
    });
    if (usage) {
      this.lastUsage = usage;
      this.totalUsage = addUsage(this.totalUsage, usage);
    }
    if (!turn) return;
    const toolRoundId = turn.toolCalls.length ? `${this.requestId}:round-${this.roundCounter++}` : undefined;
    const message: Assistant = {
      role: "assistant",
      text: turn.text,
      ...(turn.thinking !== undefined ? { thinking: turn.thinking } : {}),
      ...(turn.replay ? { replay: turn.replay } : {}),
      ...(toolRoundId ? { toolRoundId } : {}),
      toolCalls: turn.toolCalls,
    };
    this.assistant = { message, turn };
    this.results = [];
  }

  /** One tool result, committed durably in completion order before the UI sees it completed
   * (docs/protocol/cursor-tools.md §2.5). */
  async commitResult(input: CommitResultInput): Promise<CommitResultOutput> {
    const { invocation, completion } = input;
    const toolCall = completion.toolCall;
    toolCall.toolCallId = invocation.callId;
    toolCall.startedAtMs = BigInt(input.startedAtMs);
    toolCall.completedAtMs = BigInt(Date.now());
    const message: ToolResult = {
      role: "tool",
      toolCallId: invocation.callId,
      toolName: invocation.name,
      content: completion.content,
      isError: completion.isError,
      ...(this.assistant?.message.toolRoundId ? { toolRoundId: this.assistant.message.toolRoundId } : {}),
    };
    await this.commitInBatch(message);
    this.completedCalls.add(invocation.callId);
    if (completion.readPath) this.ready.builder.addReadPath(completion.readPath);
    this.results.push({ message, toolCall });
    return { callIndex: input.callIndex, toolCall };
  }

  async buildCheckpoint(kind: CheckpointKind): Promise<CheckpointPlan> {
    const assistant = this.assistant;
    if (!assistant) throw new Error(`${kind} checkpoint without a model response`);
    const b = this.ready.builder;
    if (kind === "staged") {
      // A resumed round's steps and durable assistant batch were written by the run that first staged it; otherwise
      // the batch commits with the staged checkpoint, before the checkpoint is published and any tool runs.
      if (!assistant.resumed) this.addResponseSteps(assistant.turn);
      const batch = assistant.resumed ? [] : [assistant.message];
      return this.plan(kind, [this.snapshot([pendingEntry(assistant.message)])], batch, (s) => [
        frames.checkpoint(s[0]!.state),
      ]);
    }
    if (kind === "settled") {
      const messages = [assistant.message, ...this.results.map((r) => r.message)];
      for (const m of messages) b.addRoot(m);
      for (const r of this.results) b.addToolStep(r.toolCall);
      this.pushHistory(...messages);
      return this.plan(kind, [this.snapshot([])], [], (s) => [frames.checkpoint(s[0]!.state)]);
    }
    // Final: turn_ended, then the transitional staged checkpoint, the settled one and its repeat
    // (docs/protocol/cursor-run.md §9, §10.2–§10.5).
    this.addResponseSteps(assistant.turn);
    const staged = this.snapshot([pendingEntry(assistant.message)]);
    b.addRoot(assistant.message);
    this.pushHistory(assistant.message);
    const settled = this.snapshot([]);
    return this.plan(kind, [staged, settled], [assistant.message], ([s, t]) => {
      // The repeat is the same message, so it is encoded (and compressed) once: it carries every root id.
      const final = frames.checkpoint(t!.state);
      return [frames.turnEnded(this.totalUsage), frames.checkpoint(s!.state), final, final];
    });
  }

  /**
   * Children before the head, in one transaction with the messages the checkpoint makes visible; a superseded run
   * may not move the head (docs/protocol/cursor-run.md §6.2–§6.3, §7.1). A settled round lets the next provider call
   * start, so its index is
   * persisted in the same transaction (docs/protocol/cursor-run.md §6.5, one fsync instead of two).
   */
  async commitCheckpoint(pending: CheckpointWrite): Promise<void> {
    if (!this.deps.isCurrent()) throw new StaleCheckpointError(this.conversationId);
    const { snapshots } = pending;
    // The round ran at the last call's index (a resumed round, before any call, at 0); the next call takes the one
    // after.
    const nextCallIndex = pending.kind === "settled" ? Math.max(this.persistedCallIndex, 0) + 1 : undefined;
    await this.deps.store.commitCheckpoint({
      conversationId: this.conversationId,
      checkpointId: snapshots[snapshots.length - 1]!.stateBlob.id,
      blobs: snapshots.flatMap((s) => [...s.sets, s.stateBlob]),
      edges: snapshots.flatMap((s) => s.edges),
      stillCurrent: this.deps.isCurrent,
      ...(pending.messages.length
        ? { messages: { runId: this.requestId, rows: this.rows([...pending.messages]) } }
        : {}),
      ...(nextCallIndex !== undefined ? { providerCallIndex: { runId: this.requestId, index: nextCallIndex } } : {}),
    });
    if (nextCallIndex !== undefined) this.persistedCallIndex = nextCallIndex;
  }

  completedToolCall(callId: string): boolean {
    return this.completedCalls.has(callId);
  }

  get usage(): Usage {
    return this.totalUsage;
  }

  private addResponseSteps(turn: AssistantTurn): void {
    if (turn.thinking !== undefined) this.ready.builder.addThinkingStep(turn.thinking, turn.thinkingDurationMs ?? 0);
    if (turn.text) this.ready.builder.addAssistantStep(turn.text);
  }

  private snapshot(pending: string[]): CheckpointSnapshot {
    const usedTokens = (this.lastUsage?.inputTokens ?? 0) + (this.lastUsage?.outputTokens ?? 0);
    const maxTokens = this.facts.state.tokenDetails?.maxTokens || this.ready.model.contextWindow || 0;
    const breakdown = tokenBreakdown({
      usedTokens,
      maxTokens,
      systemPrompt: this.ready.mode.systemPrompt,
      toolDefinitions: this.ready.toolDefinitionsJson,
      ...this.projected,
    });
    const parentToolCallId = this.parent?.toolCallId;
    const progress = parentToolCallId === undefined ? undefined : foldProgress(this.history);
    return this.ready.builder.snapshot({
      pending,
      usedTokens,
      maxTokens,
      breakdown,
      ...(progress ? { progress: { parentToolCallId: parentToolCallId!, state: progress } } : {}),
    });
  }

  private pushHistory(...messages: CanonicalMessage[]): void {
    this.history.push(...messages);
    for (const m of messages) this.account(m);
  }

  private account(m: CanonicalMessage): void {
    this.projected = addProjected(this.projected, m);
  }

  private plan(
    kind: CheckpointKind,
    snapshots: CheckpointSnapshot[],
    messages: CanonicalMessage[],
    publish: (s: CheckpointSnapshot[]) => CheckpointPlan["publish"],
  ): CheckpointPlan {
    return {
      sets: snapshots.flatMap((s) => s.sets).map(({ id, data }) => ({ id, data })),
      publish: publish(snapshots),
      write: { kind, snapshots, messages },
    };
  }

  /**
   * Group commit: a result joins the batch still waiting for the store (results of one client append, or those that
   * complete while the previous batch is being written), so a batch is one transaction and one fsync, and a lone
   * result waits for nothing. Each caller resumes only once its result is durable, in completion order
   * (docs/protocol/cursor-tools.md §2.5).
   */
  private commitInBatch(message: ToolResult): Promise<void> {
    const waiting = this.resultBatch;
    if (waiting) {
      waiting.messages.push(message);
      return waiting.committed;
    }
    const batch: { messages: ToolResult[]; committed: Promise<void> } = {
      messages: [message],
      committed: Promise.resolve(),
    };
    batch.committed = this.resultsWritten.then(async () => {
      this.resultBatch = undefined;
      await this.deps.store.appendMessages(this.conversationId, this.requestId, this.rows(batch.messages));
    });
    this.resultBatch = batch;
    this.resultsWritten = batch.committed.catch(() => {});
    return batch.committed;
  }

  private rows(messages: CanonicalMessage[]): NewMessage[] {
    return messages.map((m) => ({
      role: m.role,
      origin: m.role === "user" ? m.origin : m.role,
      body: JSON.stringify(m),
      ...((m.role === "assistant" || m.role === "tool") && m.toolRoundId ? { toolRoundId: m.toolRoundId } : {}),
    }));
  }
}
