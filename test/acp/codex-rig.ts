// The rig for the Codex (ACP) end-to-end tests: the real gateway process (`byok serve` with aep.port 0), the REAL
// Codex agent (`@zed-industries/codex-acp`, pinned) as the `codex` worker, our fake OpenAI Responses server as its
// model provider (a custom Codex provider set with `-c` overrides, so neither ~/.codex nor a login is touched),
// a fresh workdir — which is also the agent's HOME, so its CODEX_HOME — per test, and AEP clients over real
// WebSockets. Nothing of the gateway is replaced.
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type FakeOpenAIResponses,
  type StreamedTurn,
  startFakeOpenAIResponses,
} from "../support/fake-openai-responses.js";
import { type GatewayProcess, startGatewayProcess } from "../support/gateway-process.js";
import { fixturePath } from "../support/util.js";
import { openSession } from "../aep/aep-client.js";
import type { OrderingChecker } from "../aep/invariants.js";

/** The provider key Codex sends: a configured secret, so no AEP client may ever see it. */
/** The AEP token: one is always required (client-chosen workdirs must lie inside aep.workdir too). */
const TOKEN = "codex-e2e-token-0123456789";

export const CODEX_API_KEY = "sk-codex-e2e-provider-key";
/** A model slug codex-acp 0.16.0 knows (an unknown one makes it print a metadata warning as agent text). */
export const CODEX_MODEL = "gpt-5.3-codex";

type TurnName =
  | "plain"
  | "thinking"
  | "plan"
  | "touchAllowed"
  | "touchDenied"
  | "patch"
  | "created"
  | "slow"
  | "backAgain";

const turns = JSON.parse(readFileSync(fixturePath("codex-acp/turns.json"), "utf8")) as Record<TurnName, StreamedTurn>;

/** A scripted model turn from test/fixtures/codex-acp/turns.json, with per-test additions (a release gate…). */
export const scripted = (name: TurnName, extra: Partial<StreamedTurn> = {}): StreamedTurn => ({
  ...turns[name],
  ...extra,
});

export interface CodexRig {
  gateway: GatewayProcess;
  fake: FakeOpenAIResponses;
  url: string;
  workdir(): Promise<string>;
  open(data: Record<string, unknown>, checker?: OrderingChecker): ReturnType<typeof openSession>;
  /** Pids of the gateway's worker processes (each leads its own process group). */
  workerPids(): number[];
  dispose(): Promise<void>;
}

export async function startCodexRig(): Promise<CodexRig> {
  const fake = await startFakeOpenAIResponses();
  const root = await mkdtemp(join(tmpdir(), "byok-codex-e2e-"));
  const agentTmp = join(root, "agent-tmp");
  await mkdir(agentTmp);
  const provider = (key: string, value: string) => ["-c", `model_providers.byok.${key}="${value}"`];
  const gateway = await startGatewayProcess({
    dataDir: join(root, "data"),
    readyTimeoutMs: 60_000, // a loaded machine (CI, parallel suites) starts tsx slowly
    config: {
      aep: { port: 0, token: TOKEN, workdir: root },
      workers: {
        codex: {
          args: [
            "-c",
            'model_provider="byok"',
            ...provider("name", "byok"),
            ...provider("base_url", fake.baseUrl),
            ...provider("env_key", "BYOK_CODEX_KEY"),
            ...provider("wire_api", "responses"),
            "-c",
            `model="${CODEX_MODEL}"`,
          ],
          // Worker env values are secrets, redacted from every envelope: its TMPDIR (Codex leaves a bwrap folder
          // there) is a sibling of the workdirs, never their prefix.
          env: { BYOK_CODEX_KEY: CODEX_API_KEY, RUST_LOG: "error", TMPDIR: agentTmp },
        },
      },
    },
  });
  const line = gateway.stdoutLines().find((l) => l.startsWith("byok-gateway AEP v1 listening on "));
  if (!line) throw new Error(`no AEP listening line in ${JSON.stringify(gateway.stdoutLines())}`);
  const url = line.slice("byok-gateway AEP v1 listening on ".length).trim();
  return {
    gateway,
    fake,
    url,
    workdir: () => mkdtemp(join(root, "work-")),
    open: (data, checker) => openSession(url, { worker: "codex", token: TOKEN, ...data }, checker),
    workerPids: () => childrenOf(gateway.pid),
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
