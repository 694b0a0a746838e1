// Maps the CLI's stdout frames to neutral WorkerEvents, with no process behind it (the replay tests drive it from
// the recorded runs). Streaming is per content block: blockId = `${apiMessageId}:${index}`. The `assistant` frame
// (one per block, sent before that block's content_block_stop) is the authoritative text and the source of
// tool.called; synthetic API-error assistant frames become turn.error, never text. A turn opens on the first
// `command_lifecycle started` of an input (or `system/init` for inputs sent without uuid) and closes on `result`.
import type { WorkerEvent } from "../types.js";
import {
  type ContentBlock,
  type ControlResponseFrame,
  type MessageFrame,
  type StdinFrame,
  type StdoutFrame,
  type StreamEventFrame,
  isControlRequestFrame,
  isControlResponseFrame,
  isMessageFrame,
  isStreamEventFrame,
} from "./frames.js";
import { InteractionRegistry } from "./interactions.js";
import { turnFinishedOf } from "./result.js";

export interface MapperSinks {
  event(event: WorkerEvent): void;
  /** A stdin frame the CLI is waiting for (the answer to a request this host cannot serve). */
  reply(frame: StdinFrame): void;
  controlResponse(frame: ControlResponseFrame): void;
  /** The process cannot go on usefully (its credentials were refused, a frame was lost): end it. */
  abandon(): void;
}

/** What a user sets when the CLI's credentials are refused (issue: its own retry loop takes minutes to say so). */
const CREDENTIALS_HINT =
  "set ANTHROPIC_API_KEY for the worker (workers.claude-code.apiKeyEnv names the variable holding the key, or " +
  "workers.claude-code.env.ANTHROPIC_API_KEY), or run it on a configured model with workers.claude-code.model";

interface OpenBlock {
  readonly kind: "text" | "reasoning" | "other";
  streamed: string;
  /** The block's text from its `assistant` frame, which wins over the concatenated deltas. */
  final?: string;
}

type ReadyEvent = Extract<WorkerEvent, { type: "worker.ready" }>;

export class ClaudeCodeMapper {
  readonly interactions = new InteractionRegistry();
  private readonly inputsByUuid = new Map<string, string>();
  private readonly openBlocks = new Map<string, OpenBlock>();
  /** Blocks per API message seen in `assistant` frames, which carry no index: the n-th frame is block n. */
  private readonly assistantBlocks = new Map<string, number>();
  private turnOpen = false;
  private lastReady: ReadyEvent | undefined;

  constructor(private readonly sinks: MapperSinks) {}

  /** Called before the user frame with this uuid is written. */
  registerInput(inputId: string, uuid: string): void {
    this.inputsByUuid.set(uuid, inputId);
  }

  handle(frame: StdoutFrame): void {
    switch (frame.type) {
      case "system":
        return this.onSystem(frame);
      case "command_lifecycle":
        return this.onLifecycle(frame);
      case "stream_event":
        return isStreamEventFrame(frame) && frame.parent_tool_use_id == null
          ? this.onStreamEvent(frame)
          : this.raw(frame);
      case "assistant":
        return isMessageFrame(frame) && frame.parent_tool_use_id == null ? this.onAssistant(frame) : this.raw(frame);
      case "user":
        return isMessageFrame(frame) && frame.parent_tool_use_id == null && frame.isReplay !== true
          ? this.onUser(frame)
          : this.raw(frame);
      case "result":
        return this.onResult(frame);
      case "control_request":
        return this.onControlRequest(frame);
      case "control_cancel_request":
        if (typeof frame.request_id === "string" && this.interactions.withdraw(frame.request_id)) {
          this.emit({ type: "interaction.withdrawn", id: frame.request_id });
        }
        return;
      case "control_response":
        return isControlResponseFrame(frame) ? this.sinks.controlResponse(frame) : this.raw(frame);
      case "keep_alive":
        return;
      default:
        return this.raw(frame);
    }
  }

  private onSystem(frame: StdoutFrame): void {
    if (frame.subtype === "init") {
      this.openTurn(undefined);
      return this.announceReady(frame);
    }
    if (frame.subtype === "api_retry") {
      const { attempt, max_retries, retry_delay_ms, error_status, error } = frame;
      this.emit({
        type: "step",
        name: "api_retry",
        detail: { attempt, max_retries, retry_delay_ms, error_status, error },
      });
      // A refused key is retried ten times over minutes by the CLI; nothing will change, so the turn ends now.
      if (error_status === 401 || error === "authentication_failed")
        this.failTurn("CONFIG_INVALID", `the worker's Anthropic API key was refused (HTTP 401): ${CREDENTIALS_HINT}`);
      return;
    }
    this.raw(frame);
  }

  /** system/init comes at the start of every turn; worker.ready is repeated only when what it reports changed. */
  private announceReady(frame: StdoutFrame): void {
    const str = (value: unknown) => (typeof value === "string" ? value : undefined);
    const ready: ReadyEvent = {
      type: "worker.ready",
      workerSessionId: str(frame.session_id) ?? "",
      model: str(frame.model),
      tools: Array.isArray(frame.tools) ? frame.tools.filter((t): t is string => typeof t === "string") : undefined,
      permissionMode: str(frame.permissionMode),
      version: str(frame.claude_code_version),
    };
    if (this.lastReady && JSON.stringify(this.lastReady) === JSON.stringify(ready)) return;
    this.lastReady = ready;
    this.emit(ready);
  }

  private onLifecycle(frame: StdoutFrame): void {
    const inputId = typeof frame.command_uuid === "string" ? this.inputsByUuid.get(frame.command_uuid) : undefined;
    if (inputId === undefined) return this.raw(frame);
    switch (frame.state) {
      case "queued":
        return this.emit({ type: "input.queued", inputId });
      case "started":
        if (this.turnOpen) return this.emit({ type: "input.started", inputId, mode: "injected" });
        this.openTurn(inputId);
        return this.emit({ type: "input.started", inputId, mode: "turn" });
      case "completed":
      case "cancelled":
        this.inputsByUuid.delete(frame.command_uuid as string);
        return this.emit({ type: "input.completed", inputId });
      default:
        return this.raw(frame);
    }
  }

  private onStreamEvent(frame: StreamEventFrame): void {
    const { event } = frame;
    const messageId = frame.api_message_id ?? event.message?.id;
    if (messageId === undefined) return;
    // A stream that broke mid-block is retried as a new message with no stop for the old blocks: close them here.
    if (event.type === "message_start") {
      for (const blockId of [...this.openBlocks.keys()])
        if (!blockId.startsWith(`${messageId}:`)) this.completeBlock(blockId, false);
      return;
    }
    if (event.type === "message_stop") return this.stopMessage(messageId, frame.abandoned_blocks);
    if (typeof event.index !== "number") return;
    const blockId = `${messageId}:${event.index}`;
    if (event.type === "content_block_start") {
      const type = event.content_block?.type;
      const kind = type === "text" ? "text" : type === "thinking" ? "reasoning" : "other";
      this.openBlocks.set(blockId, { kind, streamed: "" });
    } else if (event.type === "content_block_delta") {
      const block = this.openBlocks.get(blockId);
      const delta = event.delta;
      if (block?.kind === "text" && delta?.type === "text_delta" && delta.text) {
        block.streamed += delta.text;
        this.emit({ type: "text.delta", blockId, text: delta.text });
      } else if (block?.kind === "reasoning" && delta?.type === "thinking_delta" && delta.thinking) {
        block.streamed += delta.thinking;
        this.emit({ type: "reasoning.delta", blockId, text: delta.thinking });
      }
    } else if (event.type === "content_block_stop") {
      // Its `assistant` frame normally came first; without one the block may be retracted: message_stop tells.
      if (this.openBlocks.get(blockId)?.final !== undefined) this.completeBlock(blockId, false);
    }
  }

  /**
   * The end of an API message. When its stream broke, the CLI closes it itself and names the retracted blocks
   * (`abandoned_blocks: {api_message_id, from_block_index}`) before retrying the call.
   */
  private stopMessage(messageId: string, abandoned: unknown): void {
    const from =
      typeof abandoned === "object" &&
      abandoned !== null &&
      (abandoned as { api_message_id?: unknown }).api_message_id === messageId
        ? Number((abandoned as { from_block_index?: unknown }).from_block_index)
        : Number.POSITIVE_INFINITY;
    for (const blockId of [...this.openBlocks.keys()]) {
      if (blockId.startsWith(`${messageId}:`))
        this.completeBlock(blockId, Number(blockId.slice(messageId.length + 1)) >= from);
    }
  }

  private completeBlock(blockId: string, abandoned: boolean): void {
    const block = this.openBlocks.get(blockId);
    if (!block) return;
    this.openBlocks.delete(blockId);
    const text = block.final ?? block.streamed;
    const flag = abandoned ? { abandoned: true } : {};
    if (block.kind === "text") this.emit({ type: "text.completed", blockId, text, ...flag });
    if (block.kind === "reasoning") this.emit({ type: "reasoning.completed", blockId, text, ...flag });
  }

  private onAssistant(frame: MessageFrame): void {
    const content =
      typeof frame.message.content === "string"
        ? [{ type: "text", text: frame.message.content }]
        : frame.message.content;
    if (frame.is_api_error_message === true) {
      const message = content.map((b) => b.text ?? "").join("") || "API error";
      // "Not logged in · Please run /login": no AEP user can run /login.
      if (frame.error === "authentication_failed")
        return this.failTurn(
          "CONFIG_INVALID",
          `the worker has no usable Anthropic credentials (${message}): ${CREDENTIALS_HINT}`,
        );
      return this.emit({ type: "turn.error", code: "api_error", message });
    }
    const messageId = frame.message.id ?? "";
    for (const block of content) {
      const index = this.assistantBlocks.get(messageId) ?? 0;
      this.assistantBlocks.set(messageId, index + 1);
      this.onAssistantBlock(`${messageId}:${index}`, block);
    }
  }

  private onAssistantBlock(blockId: string, block: ContentBlock): void {
    if (block.type === "tool_use" && typeof block.id === "string" && typeof block.name === "string") {
      return this.emit({ type: "tool.called", id: block.id, name: block.name, input: block.input ?? {} });
    }
    const text = block.type === "text" ? block.text : block.type === "thinking" ? block.thinking : undefined;
    if (text === undefined) return;
    const open = this.openBlocks.get(blockId);
    if (open) {
      open.final = text;
      return;
    }
    // Without --include-partial-messages the assistant frame is the only record of the block.
    this.emit(
      block.type === "text"
        ? { type: "text.completed", blockId, text }
        : { type: "reasoning.completed", blockId, text },
    );
  }

  private onUser(frame: MessageFrame): void {
    const content = frame.message.content;
    const results =
      typeof content === "string"
        ? []
        : content.filter((b) => b.type === "tool_result" && typeof b.tool_use_id === "string");
    if (results.length === 0) return this.raw(frame);
    for (const block of results) {
      this.emit({
        type: "tool.result",
        id: block.tool_use_id as string,
        output: toolOutputText(block.content),
        isError: block.is_error === true,
      });
    }
  }

  private onResult(frame: StdoutFrame): void {
    for (const blockId of [...this.openBlocks.keys()]) this.completeBlock(blockId, false);
    for (const id of this.interactions.withdrawAll()) this.emit({ type: "interaction.withdrawn", id });
    this.assistantBlocks.clear();
    this.turnOpen = false;
    this.emit(turnFinishedOf(frame));
  }

  /**
   * Ends the turn on the driver's own finding (`code` is an AEP error code the session maps through) and gives the
   * process up; the next input starts a new one that resumes the session.
   */
  failTurn(code: "CONFIG_INVALID" | "WORKER_OUTPUT_LIMIT", message: string): void {
    for (const blockId of [...this.openBlocks.keys()]) this.completeBlock(blockId, true);
    for (const id of this.interactions.withdrawAll()) this.emit({ type: "interaction.withdrawn", id });
    this.assistantBlocks.clear();
    this.turnOpen = false;
    this.emit({ type: "turn.finished", outcome: "failed", errorCode: code, message });
    this.sinks.abandon();
  }

  private onControlRequest(frame: StdoutFrame): void {
    if (!isControlRequestFrame(frame)) return this.raw(frame);
    const outcome = this.interactions.open(frame);
    if ("reply" in outcome) return this.sinks.reply(outcome.reply);
    this.emit(outcome.event);
  }

  private openTurn(inputId: string | undefined): void {
    if (this.turnOpen) return;
    this.turnOpen = true;
    this.emit(inputId === undefined ? { type: "turn.started" } : { type: "turn.started", inputId });
  }

  private raw(frame: StdoutFrame): void {
    this.emit({ type: "raw", frame });
  }

  private emit(event: WorkerEvent): void {
    this.sinks.event(event);
  }
}

/** tool_result content: a string, or blocks whose text parts are joined (other parts named by type). */
function toolOutputText(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: { type?: string; text?: string }) =>
      part?.type === "text" ? (part.text ?? "") : `[${part?.type ?? "unknown"}]`,
    )
    .join("\n");
}
