// The upstream (Cursor's backend) answers: runs of models not configured here and every other path go there.
import { type Check, fail, PROBE_TIMEOUT_MS, pass, reasonOf, skip } from "./check.js";

export async function checkUpstream(upstream: string, offline: boolean): Promise<Check> {
  if (offline) return skip(`upstream: ${upstream} not called (--offline)`);
  try {
    // Any HTTP answer proves the host is reached; the status of a bare HEAD says nothing more.
    const response = await fetch(upstream, { method: "HEAD", signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    await response.body?.cancel();
    return pass(`upstream: ${upstream} is reachable (HTTP ${response.status})`);
  } catch (err) {
    const reason =
      (err as Error).name === "TimeoutError" ? `no answer within ${PROBE_TIMEOUT_MS / 1000} s` : reasonOf(err);
    return fail(
      `upstream: ${upstream} is unreachable (${reason})`,
      "check the network and proxy settings, or pass --upstream; Cursor's own models need it",
    );
  }
}
