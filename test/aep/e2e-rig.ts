// The rig for AEP end-to-end tests: the real gateway process (`byok serve` with aep.port 0), the REAL Claude Code CLI
// as its worker (node_modules, pinned), our fake Anthropic API behind it, a fresh workdir per test inside aep.workdir
// (each session's HOME is its own, under the data dir), the generated gateway token, and AEP clients over real
// WebSockets. Nothing of the gateway is replaced.
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeAnthropic, startFakeAnthropic } from "../support/fake-anthropic.js";
import { type GatewayProcess, startGatewayProcess } from "../support/gateway-process.js";
import { waitUntil } from "../support/util.js";
import { openSession } from "./aep-client.js";
import type { OrderingChecker } from "./invariants.js";

/** The worker's API key: a configured secret, so no AEP client may ever see it. */
export const WORKER_API_KEY = "sk-aep-e2e-worker-key";

export interface AepRig {
  gateway: GatewayProcess;
  fake: FakeAnthropic;
  url: string;
  root: string;
  /** The gateway token every client presents. */
  token: string;
  /** A fresh working directory for one test, inside aep.workdir (the session's HOME is its own, in the data dir). */
  workdir(): Promise<string>;
  open(data: Record<string, unknown>, checker?: OrderingChecker): ReturnType<typeof openSession>;
  /** Pids of the gateway's worker processes (each leads its own process group). */
  workerPids(): number[];
  /** Resolves once the gateway logged the done of `count` turns in total. */
  turnsDone(count: number): Promise<void>;
  dispose(): Promise<void>;
}

/** `aep`: more of the AEP config (a turn deadline…); `workerEnv`: more of the worker's environment. */
export async function startAepRig(
  o: { aep?: Record<string, unknown>; workerEnv?: Record<string, string> } = {},
): Promise<AepRig> {
  const fake = await startFakeAnthropic();
  const root = await mkdtemp(join(tmpdir(), "byok-aep-e2e-"));
  const gateway = await startGatewayProcess({
    dataDir: join(root, "data"),
    config: {
      aep: { port: 0, workdir: root, ...o.aep },
      workers: {
        "claude-code": {
          env: {
            ANTHROPIC_BASE_URL: fake.baseUrl,
            ANTHROPIC_API_KEY: WORKER_API_KEY,
            CLAUDE_CODE_MAX_RETRIES: "1",
            TMPDIR: root,
            ...o.workerEnv,
          },
          permissionMode: "default",
        },
      },
    },
  });
  const line = gateway.stdoutLines().find((l) => l.startsWith("byok-gateway AEP v1 listening on "));
  if (!line) throw new Error(`no AEP listening line in ${JSON.stringify(gateway.stdoutLines())}`);
  const url = line.slice("byok-gateway AEP v1 listening on ".length).trim();
  // No token configured: the gateway generated one in its data dir at first start.
  const token = readFileSync(join(root, "data", "gateway-token"), "utf8").trim();
  const doneLines = () => gateway.stderrLines().filter((l) => l.includes('"msg":"aep turn done"')).length;
  return {
    gateway,
    fake,
    url,
    root,
    workdir: () => mkdtemp(join(root, "work-")),
    token,
    open: (data, checker) => openSession(url, { worker: "claude-code", token, ...data }, checker),
    workerPids: () => childrenOf(gateway.pid),
    turnsDone: (count) =>
      waitUntil(
        () => doneLines() >= count,
        60_000,
        () => `only ${doneLines()} turns done, wanted ${count}`,
      ),
    async dispose() {
      await gateway.stop();
      await fake.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}

function childrenOf(pid: number): number[] {
  const tasks = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8");
  return tasks.trim() === "" ? [] : tasks.trim().split(/\s+/).map(Number);
}
