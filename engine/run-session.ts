// The side effects of one run, supplied to the machines with .provide(): provider calls, durable commits and the
// checkpoint graph. It decides nothing about lifecycles — the machines do — it only does what they ask, in order.
import { setImmediate as nextTurn } from "node:timers/promises";
import type { AgentRunRequest } from "../proto/gen/agent/v1/agent_pb.js";
import type { ContextMeasure, PreparedRun } from "../machines/run.js";
import type { AssistantTurn } from "../machines/model-call-contract.js";
import type { CheckpointKind, CheckpointPlan, CheckpointWrite } from "../machines/checkpoint.js";
import type { CommitResultInput, CommitResultOutput } from "../machines/tool-call.js";
import type { PromptAssets } from "../prompt/assets.js";
import { projectHistory, type CanonicalMessage } from "../providers/messages.js";
import type { ModelEventSink, ModelRequest, ProviderAdapter, ProviderEndpoint, Usage } from "../providers/types.js";
import { addUsage } from "../providers/usage.js";
import { CheckpointBuilder, pendingEntry, type CheckpointSnapshot } from "../cursor/checkpoint-builder.js";
import { frames } from "../cursor/frames.js";
import type { Store } from "../store/index.js";
import type { ModelConfig } from "./config.js";
import type { Logger } from "../log/logger.js";
import { promptCacheKeyOf, resolveModel, type ResolvedModel } from "./models.js";
import { type RunMode, runTools } from "./run-mode.js";
import { RunSetupError } from "./run-errors.js";
import { admitRequest, appendRuntimeMessage, compileRequestContext } from "./run-context.js";
import { localRunStart, requestContextBlobs } from "./run-context.js";
import { actionBlobs, assistantMessage, checkpointPlan, loadHistory, pendingRound } from "./run-setup.js";
import { readRunRequest, resumeRound, rootIds, toolResultMessage, turnStart } from "./run-setup.js";
import type { RunRequestFacts } from "./run-setup.js";
import type { HistoryCache } from "./history-cache.js";
import type { ToolServices } from "./tool-services.js";
import { Compactor } from "./compaction.js";
import { RunHistory } from "./run-history.js";
import { commitCheckpointWrite, messageRows, RoundCommits } from "./result-commits.js";
import type { ParentLink } from "../transport/agent-backend.js";
import { appendCompletions, SubagentProgress } from "./run-subagent.js";

export interface RunDeps {
  store: Store;
  assets: PromptAssets;
  models: readonly ModelConfig[];
  log: Logger;
  /** Decoded checkpoint histories shared by the runs of this gateway. */
  history: HistoryCache;
  adapterFor(endpoint: ProviderEndpoint): ProviderAdapter;
  /** The search and image services behind approved WebSearch / GenerateImage calls. */
  toolServices: ToolServices;
  /** False once a newer run of the same conversation took over (its late commits must not move the head). */
  isCurrent(): boolean;
}

interface Prepared {
  model: ResolvedModel;
  mode: RunMode;
  adapter: ProviderAdapter;
  builder: CheckpointBuilder;
  compactor: Compactor;
}

type Assistant = Extract<CanonicalMessage, { role: "assistant" }>;

export class RunSession {
  /** What the run_request says; an edited message's checkpoint is replaced by its anchor before anything is loaded. */
  private facts: RunRequestFacts;
  /** What `prepare` settles for the rest of the run; every later step needs it. */
  private prepared: Prepared | undefined;
  private readonly history = new RunHistory();
  /** The response whose tool round is running; `resumed` when it came from the client's pending checkpoint. */
  private assistant: { message: Assistant; turn: AssistantTurn; resumed?: boolean } | undefined;
  private lastUsage: Usage | undefined;
  /** When the current model call began (monotonic ms): the final step's duration is measured from it. */
  private callStartedAt = 0;
  private totalUsage: Usage = {};
  private roundCounter = 0;
  /** The provider_call_index last written for this run; -1 (createRun's value) before the first call. */
  private persistedCallIndex = -1;
  /** The running round's result commits, which carry its settled checkpoint (engine/result-commits.ts). */
  private round: RoundCommits | undefined;
  /** True once this execution owns its runs row: only then may its ending be written there (docs/protocol/cursor-run.md
   * §13, run identity). */
  claimed = false;
  /** Every tool call this run has committed a result for (a canceled parent spares the children of these). */
  private readonly completedCalls = new Set<string>();
  private readonly progress: SubagentProgress;

  constructor(
    private readonly deps: RunDeps,
    readonly requestId: string,
    private readonly request: AgentRunRequest,
    /** The parent headers when this run is a subagent's. */
    private readonly parent?: ParentLink,
  ) {
    this.facts = readRunRequest(request);
    this.progress = new SubagentProgress(deps, parent);
  }

  get toolServices(): ToolServices {
    return this.deps.toolServices;
  }

  get conversationId(): string {
    return this.facts.conversationId;
  }

  /** Once the request is admitted (engine/run-context.ts): the history roots, the turn a resume continues and the blobs
   * the user message refers to that the store lacks; they come from the client (docs/protocol/cursor-run.md §3.5). */
  async findMissingBlobs(): Promise<Uint8Array[]> {
    const model = resolveModel(this.deps.models, this.request.requestedModel);
    const run = { runId: this.requestId, conversationId: this.conversationId, model: model.model };
    const begin = localRunStart(
      this.deps.store,
      { ...run, modelId: this.request.requestedModel?.modelId ?? "" },
      () => {
        this.claimed = true;
      },
    );
    this.facts = await admitRequest(this.deps, this.facts, this.request, this.requestId, model.images, begin);
    const { state, action } = this.facts;
    // Roots the history cache holds decoded are stored (garbage collection clears the cache when it deletes).
    const cached = this.deps.history.prefix(this.conversationId, rootIds(state)).messages.length;
    return this.deps.store.missingBlobs([
      ...state.rootPromptMessagesJson.slice(cached),
      ...actionBlobs(action),
      ...requestContextBlobs(this.request),
    ]);
  }

  async prepare(fetched: Array<{ blobId: Uint8Array; data: Uint8Array }>): Promise<PreparedRun> {
    const { store } = this.deps;
    const model = resolveModel(this.deps.models, this.request.requestedModel);
    let adapter: ProviderAdapter;
    try {
      adapter = this.deps.adapterFor(model.endpoint);
    } catch (e) {
      throw new RunSetupError((e as Error).message, "failed_precondition");
    }
    if (fetched.length) await store.putBlobs(fetched.map((f) => ({ id: f.blobId, data: f.data })));
    this.facts = await compileRequestContext(store, this.facts, this.request);
    this.history.reset(await loadHistory(store, this.deps.history, this.conversationId, this.facts.state));
    const { mode, prepared } = runTools(this.deps.assets, this.facts, this.request, this.parent);
    const system: CanonicalMessage = { role: "system", content: mode.started.systemPrompt };
    const { action } = this.facts;
    // Resume (docs/protocol/cursor-run.md §11): continue the last turn; a pending round runs its tools again before any
    // model call.
    const start = await turnStart(store, action);
    const builder = new CheckpointBuilder(this.facts.state, system, start, this.requestId);
    const compaction = this.deps.assets.modes.get("compaction")!;
    const measured = { ...mode.started, tools: mode.tools };
    const compactor = new Compactor(model, measured, compaction, action.kind === "summarize");
    this.prepared = { model, mode, adapter, builder, compactor };
    if (action.kind === "summarize") {
      if (!this.history.messages.length)
        throw new RunSetupError("summarize_action on a conversation without history", "failed_precondition");
      return { ...prepared, summarize: true };
    }
    if (action.kind !== "resume") {
      const { deps, facts, request, requestId } = this;
      // A user message's run persists its first call's index with the runtime message: no commit of its own.
      const roots =
        action.kind === "userMessage"
          ? [await appendRuntimeMessage(deps, facts, action.userMessage, request, requestId, mode.started, 0)]
          : await appendCompletions(deps, facts, requestId, action.completions, this.history.messages);
      if (action.kind === "userMessage") this.persistedCallIndex = 0;
      this.history.push(...roots);
      for (const m of roots) builder.addRoot(m);
      return prepared;
    }
    const pending = pendingRound(this.facts.state);
    if (!pending) return prepared;
    this.startRound({ message: pending, turn: { text: pending.text, toolCalls: pending.toolCalls }, resumed: true });
    return { ...prepared, resumeRound: resumeRound(pending, this.requestId) };
  }

  /** The machines call nothing but findMissingBlobs and prepare before prepare has settled. */
  private get ready(): Prepared {
    if (!this.prepared) throw new Error("the run is not prepared yet");
    return this.prepared;
  }

  /** The replayable request for the next call: the same history always projects to the same request
   * (docs/protocol/cursor-run.md §7.3). */
  modelRequest(): ModelRequest {
    const { model, mode } = this.ready;
    return {
      model: model.model,
      system: mode.started.systemPrompt,
      tools: mode.tools,
      messages: projectHistory(this.history.messages),
      ...(model.maxOutputTokens ? { maxOutputTokens: model.maxOutputTokens } : {}),
      ...(model.reasoningEffort ? { reasoningEffort: model.reasoningEffort } : {}),
      ...(model.promptCacheKey ? { promptCacheKey: promptCacheKeyOf(this.conversationId) } : {}),
    };
  }

  /** The next request against the compaction threshold (docs/protocol/cursor-run.md §8.10). */
  measureContext(): ContextMeasure {
    return this.ready.compactor.measure(this.history.messages);
  }

  /** The provider pass; provider_call_index is persisted before the HTTP request (docs/protocol/cursor-run.md §6.5),
   * by the settled checkpoint that let this call start when it could carry it, else here. */
  async stream(callIndex: number, signal: AbortSignal, sink: ModelEventSink, purpose?: "summary"): Promise<void> {
    // The settled checkpoint just published leaves on the wire before this call's request is compiled and sent.
    if (callIndex > 0 && this.persistedCallIndex === callIndex) await nextTurn();
    this.callStartedAt = performance.now();
    const request = purpose === "summary" ? this.ready.compactor.request(this.history.messages) : this.modelRequest();
    if (this.persistedCallIndex !== callIndex) await this.deps.store.setProviderCallIndex(this.requestId, callIndex);
    this.persistedCallIndex = callIndex;
    this.deps.log.info("provider call started", {
      request_id: this.requestId,
      conversation_id: this.conversationId,
      call_index: callIndex,
      ...(purpose ? { purpose } : {}),
      model: request.model,
      message_count: request.messages.length,
    });
    return this.ready.adapter.stream(request, signal, sink);
  }

  recordModelCall(turn: AssistantTurn | undefined, usage: Usage | undefined): void {
    this.deps.log.info("provider call completed", {
      request_id: this.requestId,
      ok: turn !== undefined,
      tool_count: turn?.toolCalls.length ?? 0,
      input_tokens: usage?.inputTokens,
      output_tokens: usage?.outputTokens,
      cache_read_tokens: usage?.cacheReadTokens,
      cache_write_tokens: usage?.cacheWriteTokens,
    });
    if (usage) {
      this.lastUsage = usage;
      this.totalUsage = addUsage(this.totalUsage, usage);
    }
    this.ready.compactor.answered(this.history.messages, usage);
    if (!turn) return;
    const toolRoundId = turn.toolCalls.length ? `${this.requestId}:round-${this.roundCounter++}` : undefined;
    this.startRound({ message: assistantMessage(turn, toolRoundId), turn });
  }

  /** A model response: the round its tool calls make (none for a final answer) commits its results afresh. */
  private startRound(assistant: NonNullable<RunSession["assistant"]>): void {
    this.assistant = assistant;
    this.round = new RoundCommits({
      calls: assistant.turn.toolCalls.length,
      settle: () => this.settledPlan(),
      commitCheckpoint: (write) => this.commitCheckpoint(write),
      appendResults: (batch) => this.deps.store.appendMessages(this.conversationId, this.requestId, messageRows(batch)),
    });
  }

  /**
   * A finished summary call: its usage counts like any call's, and its text replaces the history before the
   * verbatim tail (docs/protocol/cursor-run.md §8.10). The compacted checkpoint makes it the client's.
   */
  recordSummary(text: string | undefined, usage: Usage | undefined): void {
    const { compactor, builder } = this.ready;
    if (usage) this.totalUsage = addUsage(this.totalUsage, usage);
    this.deps.log.info("summary call completed", {
      request_id: this.requestId,
      ok: text !== undefined,
      summarized: compactor.summarized,
      kept: this.history.messages.length - compactor.summarized,
      input_tokens: usage?.inputTokens,
      output_tokens: usage?.outputTokens,
    });
    if (!text?.trim()) return;
    const id = { requestId: this.requestId, callIndex: this.persistedCallIndex };
    this.history.reset(compactor.apply(this.history.messages, text, builder, id));
  }

  /** One tool result, committed durably in completion order before the UI sees it completed
   * (docs/protocol/cursor-tools.md §2.5). */
  async commitResult(input: CommitResultInput): Promise<CommitResultOutput> {
    const { invocation, completion } = input;
    const toolCall = completion.toolCall;
    toolCall.toolCallId = invocation.callId;
    toolCall.startedAtMs = BigInt(input.startedAtMs);
    toolCall.completedAtMs = BigInt(Date.now());
    const message = toolResultMessage(invocation, completion, this.assistant?.message.toolRoundId);
    // The round's last result may carry the settled checkpoint, so it is built from everything the result brings.
    if (completion.readPath) this.ready.builder.addReadPath(completion.readPath);
    // An approved SwitchMode (docs/protocol/cursor-tools.md §6.5): the run keeps its system prompt.
    const mode = completion.switchMode && this.ready.mode.switchTo(completion.switchMode);
    await this.round!.commit(message, toolCall);
    this.completedCalls.add(invocation.callId);
    if (!mode) return { callIndex: input.callIndex, toolCall };
    this.deps.log.info("mode switched", { request_id: this.requestId, mode: mode.id });
    return { callIndex: input.callIndex, toolCall, mode };
  }

  async buildCheckpoint(kind: CheckpointKind): Promise<CheckpointPlan> {
    if (kind === "compacted") {
      const summary = this.ready.compactor.summary;
      if (!summary) throw new Error("compacted checkpoint without a summary");
      return checkpointPlan(kind, [await this.snapshot([])], [summary], (s) => [
        frames.checkpoint(s[0]!.state, s[0]!.stateBlob.data),
      ]);
    }
    // A summarize_action run ends without a response: turn_ended, then its checkpoint three times, the shape every
    // successful ending has (docs/protocol/cursor-run.md §10.2).
    if (kind === "final" && this.facts.action.kind === "summarize") {
      return checkpointPlan(kind, [await this.snapshot([])], [], ([s]) => {
        const final = frames.checkpoint(s!.state, s!.stateBlob.data);
        return [frames.turnEnded(this.totalUsage), final, final, final];
      });
    }
    const assistant = this.assistant;
    if (!assistant) throw new Error(`${kind} checkpoint without a model response`);
    const b = this.ready.builder;
    if (kind === "staged") {
      // A resumed round's steps and durable assistant batch were written by the run that first staged it; otherwise
      // the batch commits with the staged checkpoint, before the checkpoint is published and any tool runs.
      if (!assistant.resumed) this.addResponseSteps(assistant.turn);
      const batch = assistant.resumed ? [] : [assistant.message];
      const plan = checkpointPlan(kind, [await this.snapshot([pendingEntry(assistant.message)])], batch, (s) => [
        frames.checkpoint(s[0]!.state, s[0]!.stateBlob.data),
      ]);
      const { todos } = this.history.derived;
      return { ...plan, turn: { steps: b.stepCount, ...(todos ? { todos } : {}) } };
    }
    if (kind === "settled") return this.round!.takeSettled();
    // Final: step_completed for the answer's last step before its blobs, then turn_ended, the transitional staged
    // checkpoint, the settled one and its repeat (docs/protocol/cursor-run.md §9, §10.2–§10.5).
    const stepsBefore = b.stepCount;
    this.addResponseSteps(assistant.turn);
    const lead =
      b.stepCount > stepsBefore ? [frames.stepCompleted(b.stepCount, performance.now() - this.callStartedAt)] : [];
    const staged = await this.snapshot([pendingEntry(assistant.message)]);
    b.addRoot(assistant.message);
    this.history.push(assistant.message);
    const settled = await this.snapshot([]);
    const plan = checkpointPlan(kind, [staged, settled], [assistant.message], ([s, t]) => {
      // The repeat is the same message, so it is encoded (and compressed) once: it carries every root id.
      const final = frames.checkpoint(t!.state, t!.stateBlob.data);
      return [frames.turnEnded(this.totalUsage), frames.checkpoint(s!.state, s!.stateBlob.data), final, final];
    });
    return { ...plan, lead };
  }

  /** The checkpoint's durable write (engine/result-commits.ts); a settled round persists the next call's index. */
  async commitCheckpoint(pending: CheckpointWrite): Promise<void> {
    const { deps, conversationId, requestId } = this;
    const next = await commitCheckpointWrite(
      deps,
      { conversationId, runId: requestId },
      pending,
      this.persistedCallIndex,
    );
    if (next !== undefined) this.persistedCallIndex = next;
  }

  completedToolCall(callId: string): boolean {
    return this.completedCalls.has(callId);
  }

  get usage(): Usage {
    return this.totalUsage;
  }

  /** The round settled: the batch and its results appended to the roots, one step per result (cursor-tools.md §4.3). */
  private async settledPlan(): Promise<CheckpointPlan> {
    const b = this.ready.builder;
    const { completed } = this.round!;
    const messages = [this.assistant!.message, ...completed.map((r) => r.message)];
    for (const m of messages) b.addRoot(m);
    for (const r of completed) b.addToolStep(r.toolCall);
    this.history.push(...messages);
    return checkpointPlan("settled", [await this.snapshot([])], [], (s) => [
      frames.checkpoint(s[0]!.state, s[0]!.stateBlob.data),
    ]);
  }

  private addResponseSteps(turn: AssistantTurn): void {
    if (turn.thinking !== undefined) this.ready.builder.addThinkingStep(turn.thinking, turn.thinkingDurationMs ?? 0);
    if (turn.text) this.ready.builder.addAssistantStep(turn.text);
  }

  private async snapshot(pending: string[]): Promise<CheckpointSnapshot> {
    const usedTokens = (this.lastUsage?.inputTokens ?? 0) + (this.lastUsage?.outputTokens ?? 0);
    const maxTokens = this.facts.state.tokenDetails?.maxTokens || this.ready.model.contextWindow || 0;
    const { builder, mode } = this.ready;
    const breakdown = this.history.breakdown(
      usedTokens,
      maxTokens,
      mode.started.systemPrompt,
      mode.toolDefinitionsJson,
    );
    const progress = await this.progress.entries(this.history);
    return builder.snapshot({
      pending,
      usedTokens,
      maxTokens,
      breakdown,
      mode: mode.wire,
      plans: this.history.plans,
      derived: this.history.derived,
      progress,
    });
  }
}
