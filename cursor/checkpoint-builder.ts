// Builds the client's checkpoint (ConversationStateStructure) and the content-addressed blob graph behind it
// (docs/protocol/cursor-run.md §4.1, §4.2, §4.5, §5.2; docs/protocol/cursor-tools.md §4). Blobs are immutable: a turn
// "grows" by writing a new Turn blob that lists more steps. Only blobs the client does not hold yet are handed out for
// SET, so the work per checkpoint is proportional to what is new; the client's own state is cloned so fields we do not
// model survive.
import { create, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import {
  type AgentMode,
  ConversationPlanSchema,
  CommunicateUpdateTurnStateSchema,
  ConversationStateStructureSchema,
  ConversationStepSchema,
  ConversationSummaryArchiveSchema,
  ConversationSummarySchema,
  ConversationTurnStructureSchema,
  PlanRegistryEntrySchema,
  TodoItemSchema,
  UserMessageSchema,
  type CommunicateUpdateTurnState,
  type ConversationStateStructure,
  type ConversationStep,
  type PromptTokenBreakdownSnapshot,
  type ToolCall,
  type UserMessage,
} from "../proto/gen/agent/v1/agent_pb.js";
import type { CanonicalMessage } from "../providers/messages.js";
import { BlobKinds, EdgeKinds, blobId, hexId, hexIds, type BlobEdge, type BlobPut } from "../cursor/blob-graph.js";
import type { SavedPlan } from "./plan-state.js";
import type { DerivedState, StepState } from "./derived-state.js";
import { encodeRootMessage } from "./root-messages.js";
import { todoItem } from "./tools/todo-write.js";

/** root_prompt_messages_json is field 1, the first the state's encoding writes: each root's tag, length and id. */
const ROOTS_FIELD = ConversationStateStructureSchema.field.rootPromptMessagesJson.number;

function rootEntries(ids: readonly Uint8Array[]): Uint8Array {
  const writer = new BinaryWriter();
  for (const id of ids) writer.tag(ROOTS_FIELD, WireType.LengthDelimited).bytes(id);
  return writer.finish();
}

function concatBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

export interface CheckpointSnapshot {
  state: ConversationStateStructure;
  /** The encoded state, stored as our own checkpoint blob (the head points at it); never SET to the client. */
  stateBlob: BlobPut;
  /** Blobs new since the previous snapshot, children before parents. */
  sets: BlobPut[];
  /** Edges recording what this snapshot added (the state blob itself lists every root). */
  edges: BlobEdge[];
}

/** The turn a run writes into: a new one for a user message, the checkpoint's last one when resuming, or none for a
 * summarize_action run (its checkpoint changes the history, not the turns). */
export type TurnStart =
  | { kind: "new"; userMessage: UserMessage }
  | { kind: "continue"; userMessage: Uint8Array; steps: Uint8Array[] }
  | { kind: "none" };

/** The pending_tool_calls entry of a staged checkpoint: the assistant batch as root-message JSON. */
export function pendingEntry(message: CanonicalMessage): string {
  return new TextDecoder().decode(encodeRootMessage(message));
}

/** The progress fold as Cursor's CommunicateUpdateTurnState: the run's own top-level fields take it apart, and a
 * child run's entry in communicate_update_states_by_parent_tool_call_id is exactly this. */
export function communicateUpdateTurnState(steps: StepState): CommunicateUpdateTurnState {
  return create(CommunicateUpdateTurnStateSchema, {
    history: steps.history.map((h) => ({ step: h.step, messageIndex: h.messageIndex })),
    finalSummary: steps.finalSummary,
    completedSubtitle: steps.completedSubtitle,
  });
}

export class CheckpointBuilder {
  private readonly roots: Uint8Array[];
  /** The roots' ids in hex, same order: a snapshot finds its fresh roots without re-encoding every id. */
  private readonly rootKeys: string[];
  private readonly priorTurns: Uint8Array[];
  private readonly readPaths: string[];
  private readonly steps: Uint8Array[] = [];
  private readonly onClient = new Set<string>();
  private fresh: BlobPut[] = [];
  private readonly freshIds = new Set<string>();
  private freshEdges: BlobEdge[] = [];
  private readonly userMessageId: Uint8Array | undefined;
  /** The summary this run wrote and the archives it added (docs/protocol/cursor-run.md §8.10). */
  private summaryId: Uint8Array | undefined;
  private readonly archives: Uint8Array[] = [];
  /** The encoded roots field of the first `count` roots: a snapshot encodes only the roots added since. */
  private rootsField: { count: number; bytes: Uint8Array } = { count: 0, bytes: new Uint8Array(0) };

  constructor(
    private readonly base: ConversationStateStructure,
    systemRoot: CanonicalMessage,
    turn: TurnStart,
    private readonly requestId: string,
  ) {
    const baseKeys = hexIds(base.rootPromptMessagesJson);
    for (const key of baseKeys) this.onClient.add(key);
    for (const id of [...base.turns, ...base.todos]) this.onClient.add(hexId(id));
    // The system root is this run's PromptSpec; a changed prompt gets a new content address
    // (docs/protocol/cursor-run.md §8.1–§8.2).
    const system = this.put(encodeRootMessage(systemRoot), BlobKinds.RootPromptJson);
    this.roots = [system, ...base.rootPromptMessagesJson.slice(1)];
    this.rootKeys = [hexId(system), ...baseKeys.slice(1)];
    this.readPaths = [...base.readPaths];
    if (turn.kind === "new") {
      this.priorTurns = [...base.turns];
      this.userMessageId = this.put(toBinary(UserMessageSchema, turn.userMessage), BlobKinds.UserMessage);
    } else if (turn.kind === "none") {
      this.priorTurns = [...base.turns];
      this.userMessageId = undefined;
    } else {
      // A resumed turn grows from where the checkpoint left it; its blobs are already the client's.
      this.priorTurns = base.turns.slice(0, -1);
      this.userMessageId = turn.userMessage;
      this.steps.push(...turn.steps);
      for (const id of [turn.userMessage, ...turn.steps]) this.onClient.add(hexId(id));
    }
  }

  /** Blob ids of the model transcript, in order (system first). */
  rootIds(): readonly Uint8Array[] {
    return this.roots;
  }

  addRoot(message: CanonicalMessage): Uint8Array {
    const id = this.put(encodeRootMessage(message), BlobKinds.RootPromptJson);
    this.roots.push(id);
    this.rootKeys.push(hexId(id));
    return id;
  }

  /**
   * A summary replaces the roots after the system prompt up to `keptFrom` (a root index) with one summary root. The
   * replaced roots stay listed in the new archive, which with the summary itself goes into the checkpoint's summary
   * fields.
   */
  compact(summaryRoot: CanonicalMessage, summary: string, keptFrom: number): void {
    const summaryMessage = this.put(encodeRootMessage(summaryRoot), BlobKinds.RootPromptJson);
    const summarizedMessages = this.roots.splice(1, keptFrom - 1, summaryMessage);
    this.rootKeys.splice(1, keptFrom - 1, hexId(summaryMessage));
    this.rootsField = { count: 0, bytes: new Uint8Array(0) };
    this.summaryId = this.put(
      toBinary(ConversationSummarySchema, create(ConversationSummarySchema, { summary })),
      BlobKinds.ConversationSummary,
    );
    const archive = create(ConversationSummaryArchiveSchema, {
      summarizedMessages,
      summary,
      windowTail: this.roots.length - 2,
      summaryMessage,
    });
    this.archives.push(
      this.put(toBinary(ConversationSummaryArchiveSchema, archive), BlobKinds.ConversationSummaryArchive),
    );
  }

  /** Checkpoint metadata that is not canonical history still advances with typed completions
   * (docs/protocol/cursor-run.md §11). */
  addReadPath(path: string): void {
    if (!this.readPaths.includes(path)) this.readPaths.push(path);
  }

  addThinkingStep(text: string, durationMs: number): void {
    this.addStep(create(ConversationStepSchema, { message: { case: "thinkingMessage", value: { text, durationMs } } }));
  }

  addAssistantStep(text: string): void {
    this.addStep(create(ConversationStepSchema, { message: { case: "assistantMessage", value: { text } } }));
  }

  addToolStep(toolCall: ToolCall): void {
    this.addStep(create(ConversationStepSchema, { message: { case: "toolCall", value: toolCall } }));
  }

  /** Steps the current turn holds so far. */
  get stepCount(): number {
    return this.steps.length;
  }

  /**
   * A checkpoint of the current turn. `extraRoots` are appended to the stable roots for this snapshot only (the
   * final sequence publishes the transitional checkpoint without the last assistant message,
   * docs/protocol/cursor-run.md §10.2).
   */
  snapshot(opts: {
    pending: string[];
    usedTokens: number;
    maxTokens: number;
    breakdown?: PromptTokenBreakdownSnapshot;
    /** The mode the run is in now (an approved SwitchMode moved it); a resume continues in it. */
    mode?: AgentMode;
    /** The plans the history saved, oldest first (cursor/plan-state.ts); none leaves the client's fields alone. */
    plans?: readonly SavedPlan[];
    /** The history's fold; the client's own fields stay as they are where it derived nothing. */
    derived?: DerivedState;
    /** Progress by parent Task call id: a subagent's own and its children's (docs/protocol/cursor-run.md §13.2);
     * merged into the client's entries. */
    progress?: ReadonlyMap<string, StepState>;
  }): CheckpointSnapshot {
    const turnId = this.turnBlob();
    // A shallow copy: every field the snapshot changes is replaced, never mutated, so the client's state (and its
    // unknown fields) is shared, not deep-cloned per snapshot.
    const state: ConversationStateStructure = { ...this.base };
    state.rootPromptMessagesJson = [...this.roots];
    state.turns = turnId ? [...this.priorTurns, turnId] : [...this.priorTurns];
    if (this.summaryId) {
      state.summary = this.summaryId;
      state.summaryArchive = this.archives[this.archives.length - 1]!;
      state.summaryArchives = [...this.base.summaryArchives, ...this.archives];
      state.selfSummaryCount = this.base.selfSummaryCount + this.archives.length;
    }
    state.pendingToolCalls = opts.pending;
    state.readPaths = [...this.readPaths];
    if (opts.derived) this.writeDerived(state, opts.derived);
    if (opts.progress?.size) {
      // Spread and fromEntries define own properties, so no call id (`__proto__` included) reaches a prototype.
      const filed = [...opts.progress].map(([taskCallId, steps]) => [taskCallId, communicateUpdateTurnState(steps)]);
      state.communicateUpdateStatesByParentToolCallId = {
        ...state.communicateUpdateStatesByParentToolCallId,
        ...Object.fromEntries(filed),
      };
    }
    state.tokenDetails = create(ConversationStateStructureSchema.field.tokenDetails.message!, {
      ...(this.base.tokenDetails ?? {}),
      usedTokens: opts.usedTokens,
      maxTokens: opts.maxTokens,
      ...(opts.breakdown ? { breakdown: opts.breakdown } : {}),
    }) as ConversationStateStructure["tokenDetails"];
    if (opts.mode !== undefined) state.mode = opts.mode;
    const planBlob = this.applyPlans(state, opts.plans ?? []);
    const data = this.encodeState(state);
    const stateBlob = { id: blobId(data), data, kind: BlobKinds.Checkpoint };
    if (planBlob) this.edge(stateBlob.id, planBlob, EdgeKinds.CheckpointPlan, 0);
    if (turnId) this.edge(stateBlob.id, turnId, EdgeKinds.CheckpointTurn, state.turns.length - 1);
    this.rootKeys.forEach((key, i) => {
      if (this.freshIds.has(key)) this.edge(stateBlob.id, this.roots[i]!, EdgeKinds.CheckpointRootPrompt, i);
    });

    const sets = this.fresh;
    const edges = this.freshEdges;
    this.fresh = [];
    this.freshIds.clear();
    this.freshEdges = [];
    for (const b of sets) this.onClient.add(hexId(b.id));
    return { state, stateBlob, sets, edges };
  }

  /**
   * toBinary(state), byte for byte, without re-encoding every root id each snapshot (hundreds of them in a long
   * conversation): the roots field is written first, so the encoded roots so far and the rest of the state are
   * concatenated. Roots only grow between compactions, which start the cache over.
   */
  private encodeState(state: ConversationStateStructure): Uint8Array {
    const { count, bytes } = this.rootsField;
    if (count < this.roots.length)
      this.rootsField = {
        count: this.roots.length,
        bytes: concatBytes(bytes, rootEntries(this.roots.slice(count))),
      };
    const rest = toBinary(ConversationStateStructureSchema, { ...state, rootPromptMessagesJson: [] });
    return concatBytes(this.rootsField.bytes, rest);
  }

  /** `plan` is the blob of the current (last saved) plan; `plans` keeps the client's entries and adds every saved
   * one by its id. Returns the plan blob's id. */
  private applyPlans(state: ConversationStateStructure, plans: readonly SavedPlan[]): Uint8Array | undefined {
    const current = plans.at(-1);
    if (!current) return undefined;
    const plan = create(ConversationPlanSchema, { plan: current.plan });
    state.plan = this.put(toBinary(ConversationPlanSchema, plan), BlobKinds.ConversationPlan);
    state.plans = { ...state.plans };
    for (const p of plans) state.plans[p.id] = create(PlanRegistryEntrySchema, { id: p.id, path: p.uri });
    return state.plan;
  }

  /** The current turn as a new blob (none for a run without a turn of its own). */
  private turnBlob(): Uint8Array | undefined {
    if (!this.userMessageId) return undefined;
    const turn = create(ConversationTurnStructureSchema, {
      turn: {
        case: "agentConversationTurn",
        value: { userMessage: this.userMessageId, steps: [...this.steps], requestId: this.requestId },
      },
    });
    const turnId = this.put(toBinary(ConversationTurnStructureSchema, turn), BlobKinds.ConversationTurn);
    this.edge(turnId, this.userMessageId, EdgeKinds.TurnUserMessage, 0);
    this.steps.forEach((step, i) => {
      this.edge(turnId, step, EdgeKinds.TurnStep, i);
    });
    return turnId;
  }

  /** The to-do list (each item its own TodoItem blob, like every other message-typed field of the structure) and the
   * progress updates (docs/protocol/cursor-run.md §8.9). */
  private writeDerived(state: ConversationStateStructure, derived: DerivedState): void {
    if (derived.todos) {
      state.todos = derived.todos.map((t) => this.put(toBinary(TodoItemSchema, todoItem(t)), BlobKinds.TodoItem));
    }
    if (derived.steps) {
      const { history, finalSummary, completedSubtitle } = communicateUpdateTurnState(derived.steps);
      state.communicateUpdateHistory = history;
      state.communicateUpdateFinalSummary = finalSummary;
      state.communicateUpdateCompletedSubtitle = completedSubtitle;
    }
  }

  private addStep(step: ConversationStep): void {
    this.steps.push(this.put(toBinary(ConversationStepSchema, step), BlobKinds.ConversationStep));
  }

  private put(data: Uint8Array, kind: number): Uint8Array {
    const id = blobId(data);
    const key = hexId(id);
    if (!this.onClient.has(key) && !this.freshIds.has(key)) {
      this.fresh.push({ id, data, kind });
      this.freshIds.add(key);
    }
    return id;
  }

  private edge(parent: Uint8Array, child: Uint8Array, kind: number, ordinal: number): void {
    this.freshEdges.push({ parent, child, kind, ordinal });
  }
}
