// The rig for the Codex (ACP) end-to-end tests: the REAL Codex agent (`@zed-industries/codex-acp`, pinned) as the
// `codex` worker, our fake OpenAI Responses server as its model provider (a custom Codex provider set with `-c`
// overrides, so neither ~/.codex nor a login is touched); each test's workdir is also the agent's HOME, so its
// CODEX_HOME. test/aep/worker-rig.ts has what every worker's rig shares.
import { readFileSync } from "node:fs";
import { mkdir, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type FakeOpenAIResponses,
  type StreamedTurn,
  startFakeOpenAIResponses,
} from "../support/fake-openai-responses.js";
import { fixturePath } from "../support/util.js";
import { startWorkerRig, type WorkerRig } from "../aep/worker-rig.js";

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

export type CodexRig = WorkerRig<FakeOpenAIResponses>;

export async function startCodexRig(): Promise<CodexRig> {
  const fake = await startFakeOpenAIResponses();
  const root = await mkdtemp(join(tmpdir(), "byok-codex-e2e-"));
  const agentTmp = join(root, "agent-tmp");
  await mkdir(agentTmp);
  const provider = (key: string, value: string) => ["-c", `model_providers.byok.${key}="${value}"`];
  return startWorkerRig({
    worker: "codex",
    fake,
    root,
    aep: { token: TOKEN },
    workerConfig: {
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
      // Worker env values are secrets, redacted from every envelope: its TMPDIR (Codex leaves a bwrap folder there)
      // is a sibling of the workdirs, never their prefix.
      env: { BYOK_CODEX_KEY: CODEX_API_KEY, RUST_LOG: "error", TMPDIR: agentTmp },
    },
  });
}
