// Ending classes on the wire that endings.test.ts and protocol-errors.test.ts do not already show (issue 3;
// docs/protocol/cursor-run.md §5.2, §7.3, §7.4, §10.2–§10.6; docs/protocol/cursor-transport.md §6): an in-band provider
// error, a stalled pass ended by cancel_action with its thinking closed first, a blob SET never acknowledged, cancel
// while the final checkpoint waits, a superseded run's late Exec/KV answers, the last RunSSE subscriber gone past the
// reconnect grace, and a terminal stream that is replayed to a reconnecting subscriber and later gone. The real gateway
// runs as a child process; the provider and the Cursor client are fakes.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentClientMessageSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { ErrorDetails_Error } from "../../proto/gen/aiserver/v1/aiserver_pb.js";
import { CursorClient, type RunHandle } from "../support/cursor-client.js";
import { createWorkspace } from "../support/client-workspace.js";
import { startFakeOpenAI, type FakeOpenAI } from "../support/fake-openai.js";
import { killAllGateways, startGatewayProcess, type GatewayProcess } from "../support/gateway-process.js";
import {
  assertEndStreamInvariants,
  frameKind,
  frameKinds,
  type ObservedFrame,
  type RunEnd,
} from "../support/observed-frames.js";
import { sleep, waitUntil } from "../support/util.js";

const MODEL = "byok-e2e-exhaustive";
const STALL_MODEL = "byok-e2e-stall";
const KEY = "sk-e2e-exhaustive-5d20a7";
const repeat = (kind: string, times: number): string[] => Array<string>(times).fill(kind);
const TEXT_UNTIL_FINAL_SETS = ["text_delta", "token_delta", "step_completed", ...repeat("kv_set", 6)];
const chunk = (delta: object) =>
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta, finish_reason: null }] })}\n\n`;

/** A provider that starts reasoning and then sends nothing more, holding the connection open (a stall). */
interface StallServer {
  url: string;
  closedRequests(): number;
  close(): Promise<void>;
}

async function startStallServer(): Promise<StallServer> {
  let closed = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(chunk({ role: "assistant", content: null, reasoning_content: "" }));
    res.write(chunk({ content: null, reasoning_content: "Let me think" }));
    res.on("close", () => closed++);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1`,
    closedRequests: () => closed,
    close: () => (server.closeAllConnections(), new Promise<void>((resolve) => server.close(() => resolve()))),
  };
}

function failed(end: RunEnd): Extract<RunEnd, { ok: false }> {
  if (end.ok) throw new Error("expected the run to fail, it succeeded");
  return end;
}

const onConnection = (run: RunHandle, connection: number): ObservedFrame[] =>
  run.frames.filter((f) => f.connection === connection);

describe("e2e: every ending class on the wire", function () {
  this.timeout(20_000);
  let fake: FakeOpenAI;
  let stall: StallServer;
  let dataDir: string;
  /** Captured default timers. */
  let gw: GatewayProcess;
  /** Short timers (KV deadline, reconnect grace, terminal retention, heartbeat) for the timer-driven endings. */
  let quick: GatewayProcess;

  before(async function () {
    this.timeout(60_000);
    fake = await startFakeOpenAI();
    stall = await startStallServer();
    dataDir = await mkdtemp(join(tmpdir(), "byok-e2e-exhaustive-"));
    const models = [
      { id: MODEL, provider: "openai-chat", baseUrl: fake.baseUrl, apiKey: KEY, model: "gpt-e2e" },
      { id: STALL_MODEL, provider: "openai-chat", baseUrl: stall.url, apiKey: KEY, model: "reasoner" },
    ];
    [gw, quick] = await Promise.all([
      startGatewayProcess({ dataDir: join(dataDir, "default"), config: { models } }),
      startGatewayProcess({
        dataDir: join(dataDir, "quick"),
        config: {
          models,
          timers: { kvReplyDeadlineMs: 300, reconnectGraceMs: 300, terminalRetentionMs: 300, heartbeatMs: 100 },
        },
      }),
    ]);
  });
  after(async () => {
    await killAllGateways();
    await fake?.close();
    await stall?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  const conversation = (name: string) => `exhaustive-${name}-${randomUUID()}`;
  /** Waits for the run's log line `msg`, which names the ending's cause when one is given. */
  const logged = (g: GatewayProcess, requestId: string, msg: string, cause?: string) =>
    waitUntil(
      () =>
        g
          .stderrLines()
          .some(
            (l) =>
              l.includes(`"msg":"${msg}"`) && l.includes(requestId) && (!cause || l.includes(`"cause":"${cause}"`)),
          ),
      10_000,
      () => `no "${msg}" log line for ${requestId}`,
    );

  it("provider failure: an in-band stream error ends unavailable with PROVIDER_ERROR after the partial text", async () => {
    const file = join(dataDir, "in-band-error.sse");
    await writeFile(
      file,
      chunk({ role: "assistant", content: "Partial" }) +
        `data: ${JSON.stringify({ error: { message: "overloaded, try later", type: "server_error" } })}\n\n`,
    );
    fake.enqueue({ fixture: file });
    const client = new CursorClient(gw.url);
    const run = client.startRun({ conversationId: conversation("in-band"), modelId: MODEL, text: "hi" });
    const end = failed(await run.done);

    expect(run.kinds()).to.deep.equal(["text_delta", "end:unavailable"]);
    expect(end.message).to.include("overloaded, try later");
    expect(end.errorDetails?.error).to.equal(ErrorDetails_Error.PROVIDER_ERROR);
    assertEndStreamInvariants(run.frames);
    expect(client.violations()).to.deep.equal([]);
  });

  it("stall ended by cancel_action: thinking_completed with its real duration, then canceled; the provider request is dropped", async () => {
    const closedBefore = stall.closedRequests();
    const client = new CursorClient(gw.url);
    const run = client.startRun({ conversationId: conversation("stall"), modelId: STALL_MODEL, text: "think hard" });
    await run.waitForFrame("thinking_delta");
    await run.cancel("user pressed stop");
    const end = failed(await run.done);

    expect(end.code).to.equal("canceled");
    expect(run.kinds()).to.deep.equal(["thinking_delta", "thinking_completed", "end:canceled"]);
    await logged(gw, run.requestId, "run canceled", "client");
    const completed = run.frames.find((f) => frameKind(f) === "thinking_completed")!;
    const m = completed.kind === "message" ? completed.message.message : undefined;
    const update =
      m?.case === "interactionUpdate" && m.value.message.case === "thinkingCompleted"
        ? m.value.message.value
        : undefined;
    expect(update?.thinkingDurationMs).to.be.at.least(1);
    assertEndStreamInvariants(run.frames);
    await waitUntil(
      () => stall.closedRequests() > closedBefore,
      5_000,
      () => "the stalled provider request is still open",
    );
  });

  it("checkpoint failure: a blob SET never acknowledged fails the run at the KV deadline, before any checkpoint", async () => {
    fake.enqueue({ text: "final words" });
    let sets = 0;
    const client = new CursorClient(quick.url, {
      hooks: { onKv: (kv) => (kv.message.case === "setBlobArgs" && ++sets === 1 ? { silent: true } : undefined) },
    });
    const run = client.startRun({ conversationId: conversation("kv-deadline"), modelId: MODEL, text: "hi" });
    const end = failed(await run.done);

    expect(end.code).to.equal("unavailable");
    expect(end.message).to.match(/^blob SET not acknowledged in time \(kv ids 0(, \d+)*\)$/);
    expect(end.errorDetails?.error).to.equal(ErrorDetails_Error.INTERNAL);
    expect(run.kinds()).to.deep.equal([...TEXT_UNTIL_FINAL_SETS, "end:unavailable"]);
    expect(run.checkpoints).to.deep.equal([]);
    assertEndStreamInvariants(run.frames);
    await logged(quick, run.requestId, "run failed", "final_checkpoint");
  });

  it("cancel while the final checkpoint waits for its SETs: canceled, no turn_ended, no checkpoint; the late ACK changes nothing", async () => {
    fake.enqueue({ text: "almost done" });
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let sets = 0;
    const client = new CursorClient(gw.url, {
      hooks: { onKv: (kv) => (kv.message.case === "setBlobArgs" && ++sets === 1 ? { holdUntil: gate } : undefined) },
    });
    const run = client.startRun({ conversationId: conversation("cancel-final"), modelId: MODEL, text: "hi" });
    await waitUntil(
      () => run.kinds().length === TEXT_UNTIL_FINAL_SETS.length,
      10_000,
      () => `final SETs expected, saw ${JSON.stringify(run.kinds())}`,
    );
    await run.cancel("user pressed stop");
    expect(failed(await run.done).code).to.equal("canceled");
    release();
    await run.appendsSettled();

    expect(run.kinds()).to.deep.equal([...TEXT_UNTIL_FINAL_SETS, "end:canceled"]);
    expect(run.checkpoints).to.deep.equal([]);
    assertEndStreamInvariants(run.frames);
    await run.reconnect(); // the retained stream replays exactly what was sent: the late ACK added nothing
    await run.waitForFrame((f) => f.connection === 2 && f.kind === "end");
    expect(frameKinds(onConnection(run, 2))).to.deep.equal(frameKinds(onConnection(run, 1)));
  });

  it("supersession inside a tool round: the old run aborts its exec and ends canceled; its late Exec and KV answers change nothing", async () => {
    const conversationId = conversation("supersede-round");
    fake.enqueue({ toolCalls: [{ id: "call_old", name: "Read", args: { path: "a.txt" } }] });
    const oldClient = new CursorClient(gw.url, {
      workspace: createWorkspace({ "a.txt": "alpha\n" }),
      hooks: { onExec: () => ({ silent: true }) },
    });
    const old = oldClient.startRun({ conversationId, modelId: MODEL, text: "old question about a.txt" });
    await waitUntil(
      () => old.execLog.length === 1,
      10_000,
      () => `the old run's exec expected, saw ${JSON.stringify(old.kinds())}`,
    );

    fake.enqueue({ text: "Fresh answer." });
    const fresh = new CursorClient(gw.url).startRun({ conversationId, modelId: MODEL, text: "never mind" });
    expect(failed(await old.done).code).to.equal("canceled");
    await logged(gw, old.requestId, "run canceled", "superseded");
    const oldKinds = old.kinds();
    expect(oldKinds.slice(-2)).to.deep.equal(["abort", "end:canceled"]);
    expect(old.aborts).to.deep.equal([old.execLog[0]!.id]);
    expect(oldKinds).not.to.include("turn_ended");

    // The old request's client answers arrive late: its exec result, its stream_close and a KV answer.
    const late = [
      create(AgentClientMessageSchema, {
        message: {
          case: "execClientMessage",
          value: { id: old.execLog[0]!.id, message: { case: "readResult", value: {} } },
        },
      }),
      create(AgentClientMessageSchema, {
        message: {
          case: "execClientControlMessage",
          value: { message: { case: "streamClose", value: { id: old.execLog[0]!.id } } },
        },
      }),
      create(AgentClientMessageSchema, {
        message: { case: "kvClientMessage", value: { id: 0, message: { case: "setBlobResult", value: {} } } },
      }),
    ];
    for (const message of late) expect(await old.append(message)).to.deep.equal({ status: 200 });

    expect(await fresh.done).to.deep.equal({ ok: true });
    assertEndStreamInvariants(fresh.frames);
    const freshRequest = fake.requests.at(-1)!.body as { messages: Array<{ role: string; content: unknown }> };
    expect(JSON.stringify(freshRequest.messages)).not.to.include("call_old").and.not.to.include("old question");
    await old.reconnect();
    await old.waitForFrame((f) => f.connection === 2 && f.kind === "end");
    expect(frameKinds(onConnection(old, 2))).to.deep.equal(oldKinds);
    assertEndStreamInvariants(old.frames);
  });

  it("last RunSSE subscriber gone past the reconnect grace: the run is canceled and a late subscriber gets the replay", async () => {
    const closedBefore = stall.closedRequests();
    const client = new CursorClient(quick.url);
    const run = client.startRun({ conversationId: conversation("abandoned"), modelId: STALL_MODEL, text: "think" });
    await run.waitForFrame("thinking_delta");
    run.disconnect();
    await logged(quick, run.requestId, "run canceled", "subscriber_gone");
    await waitUntil(
      () => stall.closedRequests() > closedBefore,
      5_000,
      () => "the abandoned run's provider request is still open",
    );

    await run.reconnect();
    const end = await run.waitForFrame((f) => f.connection === 2 && f.kind === "end");
    expect(frameKinds(onConnection(run, 2))).to.deep.equal(["thinking_delta", "thinking_completed", "end:canceled"]);
    expect(end.kind === "end" && !end.end.ok && end.end.message).to.equal("RunSSE subscriber gone");
    assertEndStreamInvariants(run.frames);
  });

  it("a terminal stream is replayed whole to a reconnecting subscriber, and is gone after the retention time", async () => {
    fake.enqueue({ text: "Kept for replay." });
    const kept = new CursorClient(gw.url).startRun({
      conversationId: conversation("replay"),
      modelId: MODEL,
      text: "hi",
    });
    expect(await kept.done).to.deep.equal({ ok: true });
    await kept.reconnect();
    await kept.waitForFrame((f) => f.connection === 2 && f.kind === "end");
    expect(frameKinds(onConnection(kept, 2))).to.deep.equal(frameKinds(onConnection(kept, 1)));
    assertEndStreamInvariants(kept.frames);

    // With a 300 ms retention the stream disappears: a later RunSSE for that request_id finds no backlog, only the
    // heartbeats of a fresh, empty stream.
    fake.enqueue({ status: 500, body: JSON.stringify({ error: { message: "down" } }) });
    const gone = new CursorClient(quick.url).startRun({
      conversationId: conversation("gone"),
      modelId: MODEL,
      text: "hi",
    });
    expect(failed(await gone.done).code).to.equal("unavailable");
    let connection = 1;
    for (let released = false; !released; ) {
      expect(connection, "the terminal stream was never released").to.be.below(100);
      await gone.reconnect();
      connection++;
      const first = await gone.waitForFrame(
        (f) => f.connection === connection && (f.kind === "end" || frameKind(f) === "heartbeat"),
      );
      released = frameKind(first) === "heartbeat";
      if (!released) await sleep(50);
    }
    expect(frameKinds(onConnection(gone, connection), { heartbeats: true }).every((k) => k === "heartbeat")).to.equal(
      true,
    );
    gone.disconnect();
  });
});
