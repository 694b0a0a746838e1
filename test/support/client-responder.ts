// The fake Cursor client's automatic answers to the server's reverse requests: KV (the client is the blob store,
// docs/protocol/cursor-run.md §5, §5.2), Exec (results, then stream_close, docs/protocol/cursor-tools.md §3.1) and
// interaction queries (only when a test says how). Tests bend the behaviour per request with hooks: delay, hold, wrong
// branch, throw, close early, silence.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { createHash } from "node:crypto";
import type {
  AgentClientMessageSchema,
  ExecClientControlMessageSchema,
  ExecServerMessage,
  InteractionQuery,
  InteractionResponse,
  KvClientMessageSchema,
  KvServerMessage,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { answerExec, type ExecResultMessage, type ShellScript, type Workspace } from "./client-workspace.js";
import type { RunHandle } from "./cursor-client.js";
import { blobHex } from "./observed-frames.js";
import { sleep } from "./util.js";

/** How the client answers one Exec; every field is optional and the default is the workspace's honest answer. */
export interface ExecPlan {
  delayMs?: number;
  /** Answer only after this settles (e.g. `run.execAnswered(1)` to answer the first Exec after the second). */
  holdUntil?: Promise<unknown>;
  /** Never answer. */
  silent?: boolean;
  /** Send this result instead (e.g. a wrong oneof branch). */
  result?: ExecResultMessage;
  /** Send exec_client_control_message.throw with this error instead of a result. */
  throw?: string;
  /** Send stream_close before the result. */
  closeBeforeResult?: boolean;
  /** Send only stream_close, never a result. */
  closeInsteadOfResult?: boolean;
  /** By default nothing more is sent for an Exec the server aborted. */
  answerAfterAbort?: boolean;
}

export interface KvPlan {
  delayMs?: number;
  holdUntil?: Promise<unknown>;
  silent?: boolean;
  /** Refuse a SET with this SetBlobResult.error message. */
  error?: string;
}

export interface RunHooks {
  onExec?(exec: ExecServerMessage, ctx: { index: number; run: RunHandle }): ExecPlan | undefined;
  onKv?(kv: KvServerMessage, ctx: { run: RunHandle }): KvPlan | undefined;
  /** Interaction queries get no automatic answer; return a result branch to answer one. */
  onInteraction?(query: InteractionQuery, ctx: { run: RunHandle }): InteractionResponse["result"] | undefined;
}

export interface Violation {
  kind: "blob_id_mismatch" | "checkpoint_before_ack" | "duplicate_id" | "unsupported_exec" | "wire";
  detail: string;
}

export type ClientMessageInit = MessageInitShape<typeof AgentClientMessageSchema>["message"];
type KvReply = NonNullable<MessageInitShape<typeof KvClientMessageSchema>["message"]>;
type ExecControl = NonNullable<MessageInitShape<typeof ExecClientControlMessageSchema>["message"]>;

export interface ResponderContext {
  run: RunHandle;
  hooks: RunHooks;
  store: { blobs: Map<string, Uint8Array>; acknowledged: Set<string>; workspace: Workspace; shell: ShellScript };
  /** Queues one BidiAppend; `onSent` fires when its body has left the client. */
  send(message: ClientMessageInit, onSent?: () => void): Promise<unknown>;
  report(violation: Violation): void;
}

export async function answerKv(ctx: ResponderContext, kv: KvServerMessage): Promise<void> {
  const m = kv.message;
  if (m.case === undefined) return;
  const plan = ctx.hooks.onKv?.(kv, { run: ctx.run }) ?? {};
  const waiting = waitFor(plan);
  if (waiting) await waiting;
  if (plan.silent) return;
  const reply = (message: KvReply, onSent?: () => void) =>
    ctx.send({ case: "kvClientMessage", value: { id: kv.id, message } }, onSent);

  if (m.case === "getBlobArgs") {
    await reply({ case: "getBlobResult", value: { blobData: ctx.store.blobs.get(blobHex(m.value.blobId)) } });
    return;
  }
  // docs/protocol/cursor-run.md §5: the client verifies SHA-256(data) == id before storing.
  const hex = blobHex(m.value.blobId);
  const actual = sha256Hex(m.value.blobData);
  let refusal = plan.error;
  if (actual !== hex) {
    ctx.report({ kind: "blob_id_mismatch", detail: `kv ${kv.id}: blob_id ${hex} but SHA-256(blob_data) is ${actual}` });
    refusal ??= "blob_id does not match SHA-256(blob_data)";
  }
  if (refusal === undefined) ctx.store.blobs.set(hex, m.value.blobData);
  const error = refusal === undefined ? undefined : { message: refusal };
  await reply({ case: "setBlobResult", value: { error } }, () => {
    if (refusal === undefined) ctx.store.acknowledged.add(hex);
  });
}

export async function answerExecRequest(ctx: ResponderContext, exec: ExecServerMessage, index: number): Promise<void> {
  const plan = ctx.hooks.onExec?.(exec, { index, run: ctx.run }) ?? {};
  const waiting = waitFor(plan);
  if (waiting) await waiting;
  const id = exec.id;
  const wanted = (): boolean => plan.answerAfterAbort === true || !ctx.run.aborts.includes(id);
  const control = (message: ExecControl) => ctx.send({ case: "execClientControlMessage", value: { message } });
  const close = () => control({ case: "streamClose", value: { id } });
  const throwError = (error: string) => control({ case: "throw", value: { id, error } });

  if (plan.silent || !wanted()) return;
  if (plan.throw !== undefined) return void (await throwError(plan.throw));
  if (plan.closeInsteadOfResult) return void (await close());
  if (plan.closeBeforeResult) void close();

  const answer = plan.result
    ? { messages: [{ message: plan.result }], terminal: true }
    : answerExec(exec, ctx.store.workspace, ctx.store.shell);
  if (answer === undefined) {
    ctx.report({ kind: "unsupported_exec", detail: `the fake client cannot answer ${exec.message.case}` });
    return void (await throwError(`fake client: ${exec.message.case} is not supported`));
  }
  // Messages are queued back to back (not one per round trip) so one Exec's answer stays contiguous on the wire.
  let last: Promise<unknown> = Promise.resolve();
  for (const step of answer.messages) {
    if (step.delayMs) {
      await last;
      await sleep(step.delayMs);
    }
    if (!wanted()) return;
    last = ctx.send({ case: "execClientMessage", value: { id, message: step.message } });
  }
  // The real client closes the Exec stream right after the terminal result (docs/protocol/cursor-tools.md §3.1).
  if (answer.terminal && !plan.closeBeforeResult) last = close();
  await last;
}

export function answerQuery(ctx: ResponderContext, query: InteractionQuery): void {
  const result = ctx.hooks.onInteraction?.(query, { run: ctx.run });
  if (result) void ctx.send({ case: "interactionResponse", value: { id: query.id, result } });
}

export const sha256Hex = (data: Uint8Array): string => createHash("sha256").update(data).digest("hex");

/** Returns synchronously when there is nothing to wait for, so answers keep the order their requests arrived in. */
function waitFor(plan: { holdUntil?: Promise<unknown>; delayMs?: number }): Promise<void> | undefined {
  if (!plan.holdUntil && !plan.delayMs) return undefined;
  return (async () => {
    if (plan.holdUntil) await plan.holdUntil.catch(() => undefined);
    if (plan.delayMs) await sleep(plan.delayMs);
  })();
}
