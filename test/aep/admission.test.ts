// Who may open an AEP session (docs/protocol/aep.md §1): init first; the token always, as a Bearer header or init
// data, with wrong attempts rate-limited; browser Origins only when listed; client-chosen workdirs only inside
// aep.workdir; a session_key only for the token that created it; a stored workdir re-checked at every worker start.
import { expect } from "chai";
import { mkdir, mkdtemp, rename, rm, symlink } from "node:fs/promises";
import { join } from "node:path";
import { MAX_FAILED_ATTEMPTS } from "../../aep/admission.js";
import { startAepListener, type AepListener, type AepListenerOptions } from "../../aep/listener.js";
import type { Logger } from "../../log/logger.js";
import { tempStore, type TempStore } from "../store/temp-store.js";
import { AepClient, openSession } from "./aep-client.js";
import { ScriptedFactory } from "./scripted-worker.js";

const log: Logger = { info: () => {}, warn: () => {}, error: () => {} };
const TOKEN = "s3cret-token-for-tests";

describe("AEP listener admission", () => {
  let temp: TempStore;
  let root: string;
  let listener: AepListener;
  let factory: ScriptedFactory;
  const listen = (o: Partial<AepListenerOptions> = {}) =>
    startAepListener({
      port: 0,
      host: "127.0.0.1",
      token: TOKEN,
      store: temp.store.aep,
      factory,
      log,
      workdirs: { base: root, dataDir: temp.dataDir },
      ...o,
    });
  beforeEach(async () => {
    temp = await tempStore();
    root = await mkdtemp(join(temp.dataDir, "root-"));
    factory = new ScriptedFactory();
    listener = await listen();
  });
  afterEach(async () => {
    await listener.close();
    await temp.cleanup();
  });

  async function refusal(data: Record<string, unknown>, headers: Record<string, string> = {}): Promise<unknown> {
    const client = await AepClient.connect(listener.url, { headers });
    client.send("init", data);
    const error = await client.next("error");
    await client.closed;
    return error.event.data;
  }

  it("refuses a workdir that does not exist or lies outside aep.workdir", async () => {
    expect(await refusal({ token: TOKEN, workdir: join(root, "not-here") })).to.deep.include({
      code: "INVALID_MESSAGE",
    });
    expect(await refusal({ token: TOKEN, workdir: temp.dataDir })).to.deep.include({ code: "INVALID_MESSAGE" });
  });

  it("without aep.workdir refuses a client-chosen workdir; without one the session gets a fresh dir", async () => {
    await listener.close();
    listener = await listen({ workdirs: { dataDir: temp.dataDir } });
    const refused = (await refusal({ token: TOKEN, workdir: root })) as { code: string; message: string };
    expect(refused.code).to.equal("INVALID_MESSAGE");
    expect(refused.message).to.contain("aep.workdir");
    const { client } = await openSession(listener.url, { token: TOKEN });
    client.send("input", { content: "go" }, "m1");
    await client.next(
      (e) => e.event.type === "input.ack" && (e.event.data as { status: string }).status === "delivered",
    );
    expect(factory.last.options.workdir.startsWith(join(temp.dataDir, "aep-workdirs"))).to.equal(true);
    await client.close();
  });

  it("refuses frames before init, and every browser Origin — loopback too — unless listed", async () => {
    const client = await AepClient.connect(listener.url);
    client.send("input", { content: "too early" });
    expect((await client.next("error")).event.data).to.deep.include({ code: "PROTOCOL_VIOLATION" });
    await client.close();
    for (const origin of ["https://evil.example", "http://localhost:3000", "http://127.0.0.1:8788"]) {
      let refused = "";
      await AepClient.connect(listener.url, { headers: { Origin: origin } }).catch((e: Error) => (refused = e.message));
      expect(refused, origin).to.contain("403");
    }
    await listener.close();
    listener = await listen({ allowedOrigins: ["http://localhost:3000"] });
    const listed = await AepClient.connect(listener.url, { headers: { Origin: "http://localhost:3000" } });
    await listed.close();
  });

  it("needs the token, as a Bearer header or as init data, also on loopback; refuses it missing or wrong", async () => {
    expect((await openSession(listener.url, { token: TOKEN })).state.event.data).to.deep.equal({ state: "created" });
    const bearer = await AepClient.connect(listener.url, { headers: { Authorization: `Bearer ${TOKEN}` } });
    bearer.send("init", {});
    expect((await bearer.next("state")).event.data).to.deep.equal({ state: "created" });
    await bearer.close();
    let refused = "";
    await AepClient.connect(listener.url, { headers: { Authorization: "Bearer nope" } }).catch(
      (e: Error) => (refused = e.message),
    );
    expect(refused).to.contain("401");
    expect(await refusal({})).to.deep.include({ code: "AUTH_REQUIRED" });
    expect(await refusal({ token: "nope" })).to.deep.include({ code: "UNAUTHORIZED" });
  });

  it("after too many wrong tokens from one address, even the right one is refused for a while", async () => {
    for (let i = 0; i < MAX_FAILED_ATTEMPTS; i++)
      expect(await refusal({ token: `wrong-${i}` })).to.deep.include({ code: "UNAUTHORIZED" });
    for (const headers of [{}, { Authorization: `Bearer ${TOKEN}` }] as Array<Record<string, string>>) {
      let refused = "";
      await AepClient.connect(listener.url, { headers }).catch((e: Error) => (refused = e.message));
      expect(refused).to.contain("429");
    }
  });

  it("a session_key cannot be taken over with another token", async () => {
    const first = await openSession(listener.url, { token: TOKEN, session_key: "mine" });
    await first.client.close();
    await listener.close();
    listener = await listen({ token: "another-token-entirely" });
    const taken = (await refusal({ token: "another-token-entirely", session_key: "mine" })) as { code: string };
    expect(taken.code).to.equal("UNAUTHORIZED");
    await listener.close();
    listener = await listen();
    const again = await openSession(listener.url, { token: TOKEN, session_key: "mine" });
    expect(again.state.session_id).to.equal(first.state.session_id);
    await again.client.close();
  });

  it("a symlink swapped into a stored workdir is refused at the next worker start", async () => {
    const workdir = await mkdtemp(join(root, "work-"));
    const { client } = await openSession(listener.url, { token: TOKEN, workdir, session_key: "swap" });
    const elsewhere = await mkdtemp(join(temp.dataDir, "elsewhere-"));
    await rename(workdir, `${workdir}.moved`);
    await symlink(elsewhere, workdir);
    const from = client.mark();
    client.send("input", { content: "go" }, "m1");
    await client.next("runtime.execution.failed", from);
    expect(client.of("input.ack", from)[1]).to.deep.include({ status: "failed", error_code: "WORKER_START_FAILED" });
    expect(client.of("error", from)[0]!.message).to.contain("symlink");
    expect(factory.workers, "no process was started").to.have.length(0);
    await rm(workdir);
    await mkdir(workdir);
    const next = client.mark();
    client.send("input", { content: "again" }, "m2");
    await client.next(
      (e) => e.event.type === "input.ack" && (e.event.data as { status: string }).status !== "accepted",
      next,
    );
    expect(client.of("input.ack", next)[1]).to.deep.include({ status: "delivered" });
    expect(factory.last.options.workdir).to.equal(workdir);
    await client.close();
  });

  it("a half-open client (answering no ping) is dropped by the heartbeat, and its session can be re-attached", async () => {
    await listener.close();
    listener = await listen({ heartbeatMs: 100 });
    const first = await openSession(listener.url, { token: TOKEN, session_key: "half-open" });
    first.client.pause(); // reads nothing more, so it answers no ping: a peer that vanished without a FIN
    const refused = await AepClient.connect(listener.url);
    refused.send("init", { token: TOKEN, session_key: "half-open" });
    expect((await refused.next("error")).event.data).to.deep.include({ code: "SESSION_ALREADY_CONNECTED" });
    await refused.closed;
    await new Promise((resolve) => setTimeout(resolve, 400));
    const again = await openSession(listener.url, { token: TOKEN, session_key: "half-open" });
    expect(again.state.session_id).to.equal(first.state.session_id);
    await again.client.close();
    first.client.resume();
    await first.client.closed;
  });
});
