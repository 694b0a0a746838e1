// Builds the client's checkpoint (ConversationStateStructure) and the content-addressed blob graph behind it
// (docs/protocol/cursor-run.md §4.1, §4.2, §4.5, §5.2; docs/protocol/cursor-tools.md §4). Blobs are immutable: a turn
// "grows" by writing a new Turn blob that lists more steps. Only blobs the client does not hold yet are handed out for
// SET, so the work per checkpoint is proportional to what is new; the client's own state is cloned so fields we do not
// model survive.
import { clone, create, toBinary } from "@bufbuild/protobuf";
import {
  ConversationStateStructureSchema,
  ConversationStepSchema,
  ConversationTurnStructureSchema,
  UserMessageSchema,
  type CommunicateUpdateTurnState,
  type ConversationStateStructure,
  type ConversationStep,
  type PromptTokenBreakdownSnapshot,
  type ToolCall,
  type UserMessage,
} from "../proto/gen/agent/v1/agent_pb.js";
import type { CanonicalMessage } from "../providers/messages.js";
import { BlobKinds, EdgeKinds, blobId, type BlobEdge, type BlobPut } from "../cursor/blob-graph.js";
import { encodeRootMessage } from "./root-messages.js";

const hex = (id: Uint8Array) => Buffer.from(id).toString("hex");

export interface CheckpointSnapshot {
  state: ConversationStateStructure;
  /** The encoded state, stored as our own checkpoint blob (the head points at it); never SET to the client. */
  stateBlob: BlobPut;
  /** Blobs new since the previous snapshot, children before parents. */
  sets: BlobPut[];
  /** Edges recording what this snapshot added (the state blob itself lists every root). */
  edges: BlobEdge[];
}

/** The turn a run writes into: a new one for a user message, or the checkpoint's last one when resuming. */
export type TurnStart =
  | { kind: "new"; userMessage: UserMessage }
  | { kind: "continue"; userMessage: Uint8Array; steps: Uint8Array[] };

/** The pending_tool_calls entry of a staged checkpoint: the assistant batch as root-message JSON. */
export function pendingEntry(message: CanonicalMessage): string {
  return new TextDecoder().decode(encodeRootMessage(message));
}

export class CheckpointBuilder {
  private readonly roots: Uint8Array[];
  private readonly priorTurns: Uint8Array[];
  private readonly readPaths: string[];
  private readonly steps: Uint8Array[] = [];
  private readonly onClient = new Set<string>();
  private fresh: BlobPut[] = [];
  private readonly freshIds = new Set<string>();
  private freshEdges: BlobEdge[] = [];
  private readonly userMessageId: Uint8Array;

  constructor(
    private readonly base: ConversationStateStructure,
    systemRoot: CanonicalMessage,
    turn: TurnStart,
    private readonly requestId: string,
  ) {
    for (const id of [...base.rootPromptMessagesJson, ...base.turns]) this.onClient.add(hex(id));
    // The system root is this run's PromptSpec; a changed prompt gets a new content address
    // (docs/protocol/cursor-run.md §8.1–§8.2).
    this.roots = [
      this.put(encodeRootMessage(systemRoot), BlobKinds.RootPromptJson),
      ...base.rootPromptMessagesJson.slice(1),
    ];
    this.readPaths = [...base.readPaths];
    if (turn.kind === "new") {
      this.priorTurns = [...base.turns];
      this.userMessageId = this.put(toBinary(UserMessageSchema, turn.userMessage), BlobKinds.UserMessage);
    } else {
      // A resumed turn grows from where the checkpoint left it; its blobs are already the client's.
      this.priorTurns = base.turns.slice(0, -1);
      this.userMessageId = turn.userMessage;
      this.steps.push(...turn.steps);
      for (const id of [turn.userMessage, ...turn.steps]) this.onClient.add(hex(id));
    }
  }

  /** Blob ids of the model transcript, in order (system first). */
  rootIds(): readonly Uint8Array[] {
    return this.roots;
  }

  addRoot(message: CanonicalMessage): Uint8Array {
    const id = this.put(encodeRootMessage(message), BlobKinds.RootPromptJson);
    this.roots.push(id);
    return id;
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
    /** A subagent's progress, under its parent's Task call id (docs/protocol/cursor-tools.md §5.12). */
    progress?: { parentToolCallId: string; state: CommunicateUpdateTurnState };
  }): CheckpointSnapshot {
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

    const state = clone(ConversationStateStructureSchema, this.base);
    state.rootPromptMessagesJson = [...this.roots];
    state.turns = [...this.priorTurns, turnId];
    state.pendingToolCalls = opts.pending;
    state.readPaths = [...this.readPaths];
    if (opts.progress) {
      const { parentToolCallId, state: progress } = opts.progress;
      state.communicateUpdateStatesByParentToolCallId = {
        ...state.communicateUpdateStatesByParentToolCallId,
        [parentToolCallId]: progress,
      };
    }
    state.tokenDetails = create(ConversationStateStructureSchema.field.tokenDetails.message!, {
      ...(this.base.tokenDetails ?? {}),
      usedTokens: opts.usedTokens,
      maxTokens: opts.maxTokens,
      ...(opts.breakdown ? { breakdown: opts.breakdown } : {}),
    }) as ConversationStateStructure["tokenDetails"];
    const data = toBinary(ConversationStateStructureSchema, state);
    const stateBlob = { id: blobId(data), data, kind: BlobKinds.Checkpoint };
    this.edge(stateBlob.id, turnId, EdgeKinds.CheckpointTurn, state.turns.length - 1);
    this.roots.forEach((root, i) => {
      if (this.freshIds.has(hex(root))) this.edge(stateBlob.id, root, EdgeKinds.CheckpointRootPrompt, i);
    });

    const sets = this.fresh;
    const edges = this.freshEdges;
    this.fresh = [];
    this.freshIds.clear();
    this.freshEdges = [];
    for (const b of sets) this.onClient.add(hex(b.id));
    return { state, stateBlob, sets, edges };
  }

  private addStep(step: ConversationStep): void {
    this.steps.push(this.put(toBinary(ConversationStepSchema, step), BlobKinds.ConversationStep));
  }

  private put(data: Uint8Array, kind: number): Uint8Array {
    const id = blobId(data);
    const key = hex(id);
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
