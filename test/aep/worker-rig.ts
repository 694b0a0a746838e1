// What every AEP end-to-end rig shares, whichever real worker it runs (Claude Code in e2e-rig.ts, Codex over ACP in
// test/acp/codex-rig.ts): the real gateway process with aep.port 0 and one worker configured, a fake model API behind
// the worker, a fresh workdir per test inside aep.workdir, AEP clients over real WebSockets, and the per-test
// bookkeeping of the sessions a test opened. Nothing of the gateway is replaced.
import { expect } from "chai";
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import { type GatewayProcess, startGatewayProcess } from "../support/gateway-process.js";
import { type AepClient, openSession } from "./aep-client.js";
import { OrderingChecker } from "./invariants.js";

const LISTENING = "byok-gateway AEP v1 listening on ";

interface FakeApi {
  close(): Promise<void>;
  /** Scripted replies not used yet. */
  pending(): number;
}

export interface WorkerRig<F extends FakeApi> {
  gateway: GatewayProcess;
  fake: F;
  url: string;
  root: string;
  /** The gateway token every client presents. */
  token: string;
  /** A fresh working directory for one test, inside aep.workdir. */
  workdir(): Promise<string>;
  open(data: Record<string, unknown>, checker?: OrderingChecker): ReturnType<typeof openSession>;
  /** Pids of the gateway's worker processes (each leads its own process group). */
  workerPids(): number[];
  dispose(): Promise<void>;
}

export interface WorkerRigOptions<F extends FakeApi> {
  worker: string;
  fake: F;
  /** The rig's own temp folder: the data dir and aep.workdir are inside; dispose removes it. */
  root: string;
  /** The worker's config section. */
  workerConfig: Record<string, unknown>;
  /** More of the AEP config (a token, a turn deadline…). Without a token, the gateway's generated one is used. */
  aep?: Record<string, unknown>;
}

export async function startWorkerRig<F extends FakeApi>(o: WorkerRigOptions<F>): Promise<WorkerRig<F>> {
  const gateway = await startGatewayProcess({
    dataDir: join(o.root, "data"),
    readyTimeoutMs: 60_000,
    config: { aep: { port: 0, workdir: o.root, ...o.aep }, workers: { [o.worker]: o.workerConfig } },
  });
  const line = gateway.stdoutLines().find((l) => l.startsWith(LISTENING));
  if (!line) throw new Error(`no AEP listening line in ${JSON.stringify(gateway.stdoutLines())}`);
  const url = line.slice(LISTENING.length).trim();
  const token =
    typeof o.aep?.token === "string" ? o.aep.token : readFileSync(join(o.root, "data", "gateway-token"), "utf8").trim();
  return {
    gateway,
    fake: o.fake,
    url,
    root: o.root,
    token,
    workdir: () => mkdtemp(join(o.root, "work-")),
    open: (data, checker) => openSession(url, { worker: o.worker, token, ...data }, checker),
    workerPids: () => childrenOf(gateway.pid),
    async dispose() {
      await gateway.stop();
      await o.fake.close();
      await rm(o.root, { recursive: true, force: true });
    },
  };
}

function childrenOf(pid: number): number[] {
  const tasks = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8");
  return tasks.trim() === "" ? [] : tasks.trim().split(/\s+/).map(Number);
}

/** Sends an input and waits for its runtime fact; returns the mark before it. */
export async function turn(client: AepClient, content: string, id?: string): Promise<number> {
  const from = client.mark();
  client.send("input", { content }, id);
  await client.next(
    (e) => e.event.type === "runtime.execution.completed" || e.event.type === "runtime.execution.failed",
    from,
  );
  return from;
}

/**
 * Sessions a test opens on the rig: each gets an OrderingChecker; after the test every client is closed, no ordering
 * invariant may be broken and every scripted reply must have been used.
 */
export function useSessions(rig: () => WorkerRig<FakeApi>) {
  let clients: AepClient[] = [];
  let checkers: OrderingChecker[] = [];
  afterEach(async () => {
    for (const c of clients) await c.close();
    for (const checker of checkers) expect(checker.violations, "ordering invariants").to.deep.equal([]);
    expect(rig().fake.pending(), "every scripted reply was used").to.equal(0);
    clients = [];
    checkers = [];
  });
  /** `checker`: the one of an earlier client of the same session (a re-attach continues its sequence). */
  return async function session(data: Record<string, unknown> = {}, checker = new OrderingChecker()) {
    const workdir = (data.workdir as string | undefined) ?? (await rig().workdir());
    if (!checkers.includes(checker)) checkers.push(checker);
    const { client, state } = await rig().open({ workdir, ...data }, checker);
    clients.push(client);
    return { client, state, workdir, checker };
  };
}
