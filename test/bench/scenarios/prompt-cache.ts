// Scenario 7, prompt caching: one 20-turn conversation per endpoint kind, each turn a Read round and a short answer,
// against fake providers that cache as their documentation describes (provider-caches.ts) and report usage the way
// the real APIs do. The figure is the share of input tokens the provider served from its cache from the third call
// of the conversation on — what a user of a long tool loop pays for at the cached rate.
import type { ConversationStateStructure } from "../../../proto/gen/agent/v1/agent_pb.js";
import { type FakeAnthropic, startFakeAnthropic } from "../../support/fake-anthropic.js";
import { type FakeOpenAI, startFakeOpenAI } from "../../support/fake-openai.js";
import { type FakeOpenAIResponses, startFakeOpenAIResponses } from "../../support/fake-openai-responses.js";
import { runTurn } from "../bench-client.js";
import { type BenchContext, type Figure, figure } from "../figures.js";
import { type ServerProcess, startGateway } from "../processes.js";
import { AnthropicCache, OpenAIPrefixCache } from "../provider-caches.js";
import { sum } from "../stats.js";

const READ = { path: "src/notes.txt" };
const ANSWER = "The notes are as before.";

interface CallUsage {
  total: number;
  cached: number;
}

interface Kind {
  id: string;
  /** Queues one reply that caches like the endpoint and records the usage it reports. */
  enqueue(calls: CallUsage[]): void;
}

// Each reply answers the round's tool result with text, and anything else with a Read call.
function anthropicKind(fake: FakeAnthropic): Kind {
  const cache = new AnthropicCache();
  let call = 0;
  return {
    id: "cache-anthropic",
    enqueue: (calls) =>
      fake.enqueue((body) => {
        const usage = cache.usage(body);
        const { input_tokens, cache_read_input_tokens: read, cache_creation_input_tokens: written } = usage;
        calls.push({ total: input_tokens + read + written, cached: read });
        const last = body.messages.at(-1).content;
        const answered = Array.isArray(last) && last.some((b: { type: string }) => b.type === "tool_result");
        return {
          blocks: answered
            ? [{ type: "text", text: ANSWER }]
            : [{ type: "tool_use", id: `toolu_${++call}`, name: "Read", input: READ }],
          usage: { ...usage, output_tokens: 8 },
        };
      }),
  };
}

function chatKind(fake: FakeOpenAI): Kind {
  const cache = new OpenAIPrefixCache();
  let call = 0;
  return {
    id: "cache-chat",
    enqueue: (calls) =>
      fake.enqueue((body) => {
        const prompt = JSON.stringify(body.tools ?? []) + JSON.stringify(body.messages);
        const { total, cached } = cache.usage(prompt, body.prompt_cache_key);
        calls.push({ total, cached });
        const usage = { prompt_tokens: total, completion_tokens: 8, prompt_tokens_details: { cached_tokens: cached } };
        return body.messages.at(-1).role === "tool"
          ? { text: ANSWER, usage }
          : { toolCalls: [{ id: `call_${++call}`, name: "Read", args: READ }], usage };
      }),
  };
}

function responsesKind(fake: FakeOpenAIResponses): Kind {
  const cache = new OpenAIPrefixCache();
  let call = 0;
  return {
    id: "cache-responses",
    enqueue: (calls) =>
      fake.enqueue((body) => {
        const prompt =
          JSON.stringify(body.tools ?? []) + JSON.stringify(body.instructions) + JSON.stringify(body.input);
        const { total, cached } = cache.usage(prompt, body.prompt_cache_key);
        calls.push({ total, cached });
        const usage = { input_tokens: total, output_tokens: 8, input_tokens_details: { cached_tokens: cached } };
        return body.input.at(-1).type === "function_call_output"
          ? { text: ANSWER, usage }
          : { toolCalls: [{ callId: `call_${++call}`, name: "Read", args: READ }], usage };
      }),
  };
}

async function conversation(ctx: BenchContext, gateway: ServerProcess, kind: Kind, turns: number) {
  const calls: CallUsage[] = [];
  const blobs = new Map<string, Uint8Array>();
  let checkpoint: ConversationStateStructure | undefined;
  for (let turn = 1; turn <= turns; turn++) {
    kind.enqueue(calls);
    kind.enqueue(calls);
    const record = await runTurn({
      baseUrl: gateway.url,
      providerUrl: "http://127.0.0.1:9",
      conversationId: `${kind.id}-conversation`,
      modelId: kind.id,
      directive: { tag: `${kind.id}-${turn}`, deltas: 1 },
      workspace: ctx.workspace,
      blobs,
      ...(checkpoint ? { checkpoint } : {}),
    });
    if (!record.end.ok) throw new Error(`${kind.id}: turn ${turn} failed: ${record.end.code} ${record.end.message}`);
    checkpoint = record.checkpoint;
  }
  return calls;
}

export async function promptCacheScenario(ctx: BenchContext): Promise<Figure[]> {
  const turns = ctx.quick ? 6 : 20;
  const [anthropic, chat, responses] = await Promise.all([
    startFakeAnthropic(),
    startFakeOpenAI(),
    startFakeOpenAIResponses(),
  ]);
  const model = (id: string, provider: string, baseUrl: string, more = "") =>
    `  - {id: ${id}, provider: ${provider}, baseUrl: "${baseUrl}", apiKey: sk-bench, model: bench${more}}\n`;
  // The fakes listen on 127.0.0.1, not api.openai.com: the config asks for the key as it would for any such server.
  const config =
    "models:\n" +
    model("cache-anthropic", "anthropic", anthropic.baseUrl) +
    model("cache-chat", "openai-chat", chat.baseUrl, ", promptCacheKey: true") +
    model("cache-responses", "openai-responses", responses.baseUrl, ", promptCacheKey: true");
  const gateway = await startGateway({ upstream: ctx.fakes.upstreamUrl, config });
  const figures: Figure[] = [];
  try {
    for (const kind of [anthropicKind(anthropic), chatKind(chat), responsesKind(responses)]) {
      const calls = (await conversation(ctx, gateway, kind, turns)).slice(2);
      const share = sum(calls.map((c) => c.cached)) / sum(calls.map((c) => c.total));
      ctx.log(`prompt cache: ${kind.id} ${calls.map((c) => `${c.cached}/${c.total}`).join(" ")}`);
      figures.push(
        figure({
          scenario: "7 prompt cache",
          figure: `${kind.id.replace("cache-", "")}: input tokens read from the cache, calls 3–${turns * 2}`,
          unit: "%",
          gateway: share * 100,
          baseline: null,
          ratio: null,
          target: "≥ 90%",
          met: share >= 0.9,
        }),
      );
    }
  } finally {
    await gateway.stop();
    await Promise.all([anthropic.close(), chat.close(), responses.close()]);
  }
  return figures;
}
