// Shared set-up and readings for the client-executed tool e2e files (tools*.test.ts): one real gateway per file,
// a fresh fake OpenAI per test reached through the run's api-key credentials (so a failed test cannot leave
// scripted turns behind for the next one), and helpers that read typed updates and the blob/ack timeline.
import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { InteractionUpdate } from "../../proto/gen/agent/v1/agent_pb.js";
import type { ShellScript, Workspace } from "../support/client-workspace.js";
import { CursorClient, type RunHandle, type RunHooks } from "../support/cursor-client.js";
import type { RunStart } from "../support/run-start.js";
import { type FakeOpenAI, type RecordedChatRequest, startFakeOpenAI } from "../support/fake-openai.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { assertEndStreamInvariants, blobClosure, blobHex, type ObservedFrame } from "../support/observed-frames.js";

/** Not configured in the gateway: the run is routed by its credentials to the test's own fake (openai-chat). */
export const MODEL = "gpt-e2e-tools";

/** `n` blob SETs in a row, as `run.kinds()` lists them. */
export const sets = (n: number): string[] => Array<string>(n).fill("kv_set");

/** A round's checkpoint as the client sees it: the SETs of its four new blobs, then the checkpoint update. */
export const ROUND_CHECKPOINT = [...sets(4), "checkpoint"];

/** A successful turn's tail: turn_ended, the final checkpoint (staged, settled, settled again: cursor-run.md §10.2), the
 * EndStream. */
export const TURN_ENDINGS = ["turn_ended", "checkpoint", "checkpoint", "checkpoint", "end:ok"];

/**
 * The frames after a tool round's last tool_call_completed when the next call answers in text: the settled
 * checkpoint (its SETs first), the answer, turn_ended, then the final checkpoint sequence and the EndStream.
 */
export const SETTLED_ROUND_THEN_ANSWER = [
  ...ROUND_CHECKPOINT,
  "text_delta",
  "token_delta",
  "step_completed",
  ...sets(3),
  ...TURN_ENDINGS,
];

type ScriptedTurns = Parameters<FakeOpenAI["enqueue"]>;

export interface ToolsRig {
  gw: GatewayProcess;
  /** A fresh fake provider for one test, with `turns` scripted in order; closed by closeFakes(). */
  fake(...turns: ScriptedTurns): Promise<FakeOpenAI>;
  /** A client plus a run whose model calls go to `fake`. */
  start(
    fake: FakeOpenAI,
    opts: {
      text: string;
      workspace?: Workspace;
      shell?: ShellScript;
      hooks?: RunHooks;
      modelId?: string;
    } & Partial<RunStart>,
  ): { client: CursorClient; run: RunHandle };
  closeFakes(): Promise<void>;
  close(): Promise<void>;
}

let conversationSeq = 0;

async function startToolsRig(label: string, config: object): Promise<ToolsRig> {
  const dataDir = await mkdtemp(join(tmpdir(), `byok-e2e-${label}-`));
  const gw = await startGatewayProcess({ dataDir, config: { models: [], ...config } });
  const fakes: FakeOpenAI[] = [];
  return {
    gw,
    fake: async (...turns) => {
      const fake = await startFakeOpenAI();
      fakes.push(fake);
      fake.enqueue(...turns);
      return fake;
    },
    start(fake, opts) {
      const { text, workspace, shell, hooks, modelId, ...rest } = opts;
      const client = new CursorClient(gw.url, { workspace, shell });
      const run = client.startRun({
        conversationId: `${label}-${process.pid}-${++conversationSeq}`,
        modelId: modelId ?? MODEL,
        text,
        hooks,
        credentials: { apiKey: "sk-e2e-tools", baseUrl: fake.baseUrl },
        ...rest,
      });
      return { client, run };
    },
    closeFakes: async () => {
      await Promise.all(fakes.splice(0).map((f) => f.close()));
    },
    close: async () => {
      await Promise.all(fakes.splice(0).map((f) => f.close()));
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Registers the mocha hooks of a file that shares one rig: the gateway starts before its tests, each test's fakes
 * close after it, and the gateway stops at the end. The returned rig delegates to the one the hooks create.
 * `config` adds config sections, read when the gateway starts (after the file's earlier before() hooks).
 */
export function useToolsRig(label: string, config: () => object = () => ({})): ToolsRig {
  let rig: ToolsRig | undefined;
  const started = () => {
    if (!rig) throw new Error(`the ${label} rig is used before its before() hook ran`);
    return rig;
  };
  before(async function () {
    this.timeout(30_000); // starting the gateway child can be slow on a loaded machine
    rig = await startToolsRig(label, config());
  });
  afterEach(() => rig?.closeFakes());
  after(async () => {
    await killAllGateways();
    await rig?.close();
  });
  return {
    get gw() {
      return started().gw;
    },
    fake: (...turns) => started().fake(...turns),
    start: (fake, opts) => started().start(fake, opts),
    closeFakes: () => started().closeFakes(),
    close: () => started().close(),
  };
}

type UpdateCase = NonNullable<InteractionUpdate["message"]["case"]>;
type UpdateValue<K extends UpdateCase> = Extract<InteractionUpdate["message"], { case: K }>["value"];

/** The values of every interaction_update of one kind, in arrival order. */
export function updates<K extends UpdateCase>(run: RunHandle, kind: K): Array<UpdateValue<K>> {
  const out: Array<UpdateValue<K>> = [];
  for (const f of run.frames) {
    if (f.kind !== "message" || f.message.message.case !== "interactionUpdate") continue;
    const m = f.message.message.value.message;
    if (m.case === kind) out.push(m.value as UpdateValue<K>);
  }
  return out;
}

/** Exec requests by branch, with their ids, in arrival order. */
export function execs(run: RunHandle): Array<{ id: number; case: string; value: unknown }> {
  return run.execLog.map((e) => ({ id: e.id, case: e.case, value: e.value }));
}

/**
 * docs/protocol/cursor-run.md §5.2: for each checkpoint frame, every blob in its reference closure was SET on this run
 * before
 * the frame arrived, and its successful set_blob_result had left the client before the frame arrived. Returns one
 * line per breach (empty = fine).
 */
export function blobOrderBreaches(run: RunHandle, client: CursorClient): string[] {
  const setAt = new Map<string, { at: number; kvId: number }>();
  const ackSentAt = new Map<number, number>();
  for (const a of run.appends) {
    const m = a.message.message;
    if (
      m.case === "kvClientMessage" &&
      m.value.message.case === "setBlobResult" &&
      !m.value.message.value.error &&
      a.sentAt !== undefined
    ) {
      ackSentAt.set(m.value.id, a.sentAt);
    }
  }
  const breaches: string[] = [];
  let checkpointNo = 0;
  for (const f of run.frames) {
    if (f.kind !== "message") continue;
    const m = f.message.message;
    if (m.case === "kvServerMessage" && m.value.message.case === "setBlobArgs") {
      const hex = blobHex(m.value.message.value.blobId);
      if (!setAt.has(hex)) setAt.set(hex, { at: f.at, kvId: m.value.id });
      continue;
    }
    if (m.case !== "conversationCheckpointUpdate") continue;
    checkpointNo++;
    const { referenced, missing } = blobClosure(m.value, client.blobs);
    if (referenced.length === 0) breaches.push(`checkpoint #${checkpointNo}: references no blobs at all`);
    for (const hex of missing) breaches.push(`checkpoint #${checkpointNo}: blob ${hex} is not in the client's store`);
    for (const hex of referenced) {
      const set = setAt.get(hex);
      if (!set) breaches.push(`checkpoint #${checkpointNo}: blob ${hex} was never SET before it`);
      else {
        const acked = ackSentAt.get(set.kvId);
        if (acked === undefined || acked > f.at)
          breaches.push(`checkpoint #${checkpointNo}: blob ${hex} (kv ${set.kvId}) not acknowledged before it`);
      }
    }
  }
  return breaches;
}

/** The checks every successful tools run gets: end-stream shape, no client-side violations, blob order. */
export function assertCleanSuccess(run: RunHandle, client: CursorClient): void {
  expect(
    run.frames.filter((f) => f.kind === "end").map((f) => (f as Extract<ObservedFrame, { kind: "end" }>).end),
  ).to.deep.equal([{ ok: true }]);
  assertEndStreamInvariants(run.frames);
  expect(client.violations()).to.deep.equal([]);
  expect(blobOrderBreaches(run, client)).to.deep.equal([]);
  expect(run.aborts, "no Exec may be aborted on a successful run").to.deep.equal([]);
}

/** Request N+1 starts with request N's messages, byte for byte as JSON (docs/protocol/README.md §6.4). */
export function assertPrefix(earlier: RecordedChatRequest, later: RecordedChatRequest): unknown[] {
  const before = earlier.body.messages as unknown[];
  const after = later.body.messages as unknown[];
  expect(JSON.stringify(after.slice(0, before.length))).to.equal(JSON.stringify(before));
  return after.slice(before.length);
}

/** The staged / settled checkpoints' pending_tool_calls sizes and root counts, in order. */
export function checkpointShape(run: RunHandle): Array<{ pending: number; roots: number }> {
  return run.checkpoints.map((c) => ({ pending: c.pendingToolCalls.length, roots: c.rootPromptMessagesJson.length }));
}
