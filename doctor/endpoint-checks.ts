// Each model's endpoint answers an authenticated minimal call, made by the same adapter the gateway runs, so the
// base URL, the key, the auth scheme and the provider's model name are checked together.
import type { ModelConfig } from "../engine/config.js";
import { createProviderAdapter } from "../providers/index.js";
import { ProviderError, type ModelRequest } from "../providers/types.js";
import { type Check, fail, PROBE_TIMEOUT_MS, pass, skip } from "./check.js";

/** The smallest output every endpoint kind accepts (OpenAI Responses refuses max_output_tokens below 16). */
const PROBE_OUTPUT_TOKENS = 16;

export async function checkEndpoint(model: ModelConfig, offline: boolean): Promise<Check> {
  const name = `model ${model.id}: ${model.baseUrl}`;
  if (offline) return skip(`${name} not called (--offline)`);
  if (model.apiKey === "") return skip(`${name} not called (no key)`);
  const adapter = createProviderAdapter({
    kind: model.provider,
    baseUrl: model.baseUrl,
    apiKey: model.apiKey,
    ...(model.azureApiVersion === undefined ? {} : { azureApiVersion: model.azureApiVersion }),
  });
  const request: ModelRequest = {
    model: model.model,
    system: "Answer with one word.",
    tools: [],
    messages: [{ role: "user", content: "ping" }],
    maxOutputTokens: PROBE_OUTPUT_TOKENS,
  };
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), PROBE_TIMEOUT_MS);
  try {
    // The first event proves the endpoint accepted the call; the rest of the answer is not needed.
    let answered = false;
    const answer = () => {
      answered = true;
      abort.abort();
    };
    await adapter.stream(request, abort.signal, answer).catch((err: unknown) => {
      if (!answered) throw err;
    });
    return pass(`${name} answers a minimal call to ${model.model}`);
  } catch (err) {
    return endpointFailure(name, model, err, abort.signal.aborted);
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

function endpointFailure(name: string, model: ModelConfig, err: unknown, timedOut: boolean): Check {
  if (timedOut) return fail(`${name} did not answer within ${PROBE_TIMEOUT_MS / 1000} s`, networkFix);
  const message = err instanceof Error ? err.message : String(err);
  const status = err instanceof ProviderError ? err.status : undefined;
  const key = model.apiKeyEnv ?? "apiKey";
  if (status === 401 || status === 403)
    return fail(`${name} refused the key: ${message}`, `check that ${key} holds a valid key for this endpoint`);
  if (status === 404)
    return fail(
      `${name} does not know the call: ${message}`,
      "check baseUrl (OpenAI-style URLs end in /v1, Anthropic's do not) and model (the provider's own name)",
    );
  if (status !== undefined) return fail(`${name} failed the call: ${message}`, "read the provider's message above");
  return fail(`${name} is unreachable: ${message}`, networkFix);
}

const networkFix = "check baseUrl, the network (proxy, firewall) and that the server is running";
