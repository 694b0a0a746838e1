// AEP safe by default and failures a user can act on, end to end: the real gateway process, the REAL Claude Code CLI
// and our fake Anthropic API. Each session has its own HOME under the data dir; the CLI's tools never see the
// worker's key; a refused key is a clear error within seconds, not after the CLI's retry loop; a turn past
// aep.turnTimeoutMs ends TURN_TIMEOUT.
import { expect } from "chai";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startAepRig, WORKER_API_KEY, type AepRig } from "./e2e-rig.js";
import { turn, useSessions } from "./worker-rig.js";

/** Long enough for the CLI to start and answer a plain turn on a loaded machine. */
const TURN_TIMEOUT_MS = 8000;

describe("AEP v1 safety end to end with the real Claude Code CLI", function () {
  this.timeout(120_000);
  let rig: AepRig;
  before(async () => {
    rig = await startAepRig();
  });
  after(async () => {
    await rig?.dispose();
  });
  const session = useSessions(() => rig);

  it("two sessions in one workdir run with separate HOMEs under the data dir, none in the workdir", async () => {
    rig.fake.enqueue({ blocks: [{ type: "text", text: "One." }] }, { blocks: [{ type: "text", text: "Two." }] });
    const workdir = await rig.workdir();
    const a = await session({ workdir });
    const b = await session({ workdir });
    await turn(a.client, "first");
    await turn(b.client, "second");
    const homes = join(rig.root, "data", "aep-homes");
    for (const s of [a, b]) {
      const projects = join(homes, s.state.session_id, ".claude", "projects");
      expect(existsSync(projects), `${s.state.session_id} has its own transcripts`).to.equal(true);
    }
    const transcripts = (id: string) =>
      readdirSync(join(homes, id, ".claude", "projects")).flatMap((p) =>
        readdirSync(join(homes, id, ".claude", "projects", p)).filter((f) => f.endsWith(".jsonl")),
      );
    const [ta, tb] = [transcripts(a.state.session_id), transcripts(b.state.session_id)];
    expect(
      ta.filter((t) => tb.includes(t)),
      "no transcript is shared",
    ).to.deep.equal([]);
    expect(existsSync(join(workdir, ".claude", "projects")), "no transcript in the workdir").to.equal(false);
  });

  it("a Bash `env` inside the CLI does not show the worker's API key", async () => {
    rig.fake.enqueue(
      {
        blocks: [
          { type: "tool_use", name: "Bash", input: { command: "env > env.txt", description: "Dump the environment" } },
        ],
      },
      { blocks: [{ type: "text", text: "Dumped." }] },
    );
    const workdir = await rig.workdir();
    const { client } = await session({ workdir });
    const from = client.mark();
    client.send("input", { content: "dump env" });
    const ask = await client.next("permission_request", from);
    client.send("permission_response", { id: (ask.event.data as { id: string }).id, allowed: true });
    await client.next("runtime.execution.completed", from);
    const env = readFileSync(join(workdir, "env.txt"), "utf8");
    expect(env).to.contain("PATH=");
    expect(env).to.not.contain(WORKER_API_KEY);
    expect(env).to.not.match(/^ANTHROPIC_API_KEY=/m);
  });
});

describe("AEP v1 turn deadline (real Claude Code CLI)", function () {
  this.timeout(120_000);
  let rig: AepRig;
  before(async () => {
    rig = await startAepRig({ aep: { turnTimeoutMs: TURN_TIMEOUT_MS } });
  });
  after(async () => {
    await rig?.dispose();
  });

  it("a turn past aep.turnTimeoutMs ends TURN_TIMEOUT: error, done, runtime failed, and the log says why", async () => {
    rig.fake.enqueue({ blocks: [{ type: "text", text: "never finishes" }], chunkSize: 3, holdAfterDeltas: 1 });
    const { client } = await rig.open({ workdir: await rig.workdir() });
    const started = Date.now();
    const from = await turn(client, "take forever");
    expect(Date.now() - started).to.be.within(TURN_TIMEOUT_MS - 500, TURN_TIMEOUT_MS + 10_000);
    const executionId = client.of("input.ack", from)[0]!.execution_id;
    expect(client.of("error", from)).to.deep.include.members([
      {
        code: "TURN_TIMEOUT",
        message: "the turn ran past its deadline (aep.turnTimeoutMs)",
        execution_id: executionId,
      },
    ]);
    expect(client.of("done", from)[0]).to.deep.include({ success: false });
    expect(client.of("runtime.execution.failed", from)[0]).to.deep.include({ error_code: "TURN_TIMEOUT" });
    expect(client.of("runtime.execution.completed", from)).to.deep.equal([]);
    await rig.gateway.loggedLines((l) => l.includes('"code":"TURN_TIMEOUT"'));
    await client.close();
  });
});

describe("AEP v1 with a worker whose key is refused (real Claude Code CLI)", function () {
  this.timeout(60_000);
  let rig: AepRig;
  before(async () => {
    rig = await startAepRig();
  });
  after(async () => {
    await rig?.dispose();
  });

  it("a 401 from the API is a clear CONFIG_INVALID error naming the variable within 5 s, not after the retries", async () => {
    for (let i = 0; i < 3; i++)
      rig.fake.enqueue({ status: 401, error: { type: "authentication_error", message: "invalid x-api-key" } });
    const { client } = await rig.open({ workdir: await rig.workdir() });
    const from = client.mark();
    const started = Date.now();
    client.send("input", { content: "hello?" });
    await client.next("runtime.execution.failed", from, 5_000);
    expect(Date.now() - started).to.be.lessThan(5_000);
    const [error] = client.of("error", from);
    expect(error).to.deep.include({ code: "CONFIG_INVALID" });
    expect(error!.message).to.contain("HTTP 401").and.to.contain("ANTHROPIC_API_KEY").and.to.contain("apiKeyEnv");
    expect(client.of("done", from)[0]).to.deep.include({ success: false });
    await rig.gateway.loggedLines((l) => l.includes('"msg":"aep turn done"') && l.includes("401"));
    await client.close();
  });
});
