// Small helpers shared by the test fakes.
import type { IncomingMessage } from "node:http";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export async function readBody(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of req) parts.push(part as Buffer);
  return Buffer.concat(parts);
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `condition` until it holds; rejects with `describe()` after the timeout so failures say what was missing. */
export async function waitUntil(condition: () => boolean, timeoutMs: number, describe: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() >= deadline) throw new Error(describe());
    await sleep(10);
  }
}

/**
 * A file under the team's shared/fixtures folder, which sits beside the repository (also in CI's fresh clone);
 * BYOK_SHARED_DIR overrides the location.
 */
export function sharedFixture(relativePath: string): string {
  const shared = process.env.BYOK_SHARED_DIR ?? fileURLToPath(new URL("../../../shared/", import.meta.url));
  return join(shared, "fixtures", relativePath);
}
