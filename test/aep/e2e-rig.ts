// The rig for AEP end-to-end tests with the REAL Claude Code CLI (node_modules, pinned) as the worker and our fake
// Anthropic API behind it (worker-rig.ts has what every worker's rig shares). No token is configured: clients
// present the one the gateway generated. Each session's HOME is its own, under the data dir.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeAnthropic, startFakeAnthropic } from "../support/fake-anthropic.js";
import { startWorkerRig, type WorkerRig } from "./worker-rig.js";

/** The worker's API key: a configured secret, so no AEP client may ever see it. */
export const WORKER_API_KEY = "sk-aep-e2e-worker-key";

export interface AepRig extends WorkerRig<FakeAnthropic> {
  /** Resolves once the gateway logged the done of `count` turns in total. */
  turnsDone(count: number): Promise<void>;
}

/** `aep`: more of the AEP config (a turn deadline…); `workerEnv`: more of the worker's environment. */
export async function startAepRig(
  o: { aep?: Record<string, unknown>; workerEnv?: Record<string, string> } = {},
): Promise<AepRig> {
  const fake = await startFakeAnthropic();
  const root = await mkdtemp(join(tmpdir(), "byok-aep-e2e-"));
  const rig = await startWorkerRig({
    worker: "claude-code",
    fake,
    root,
    ...(o.aep ? { aep: o.aep } : {}),
    workerConfig: {
      env: {
        ANTHROPIC_BASE_URL: fake.baseUrl,
        ANTHROPIC_API_KEY: WORKER_API_KEY,
        CLAUDE_CODE_MAX_RETRIES: "1",
        TMPDIR: root,
        ...o.workerEnv,
      },
      permissionMode: "default",
    },
  });
  return {
    ...rig,
    turnsDone: (count) =>
      rig.gateway.loggedLines((l) => l.includes('"msg":"aep turn done"'), count, 60_000).then(() => {}),
  };
}
