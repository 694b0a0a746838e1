// An unexpected exception while one Cursor request is served ends that request with a Connect `internal` EndStream,
// logged with its ids; the service goes on serving other requests.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { AgentService } from "../../engine/agent-service.js";
import { HistoryCache } from "../../engine/history-cache.js";
import type { EndStream } from "../../cursor/errors.js";
import type { Logger } from "../../log/logger.js";
import { loadPromptAssets } from "../../prompt/assets.js";
import {
  AgentClientMessageSchema,
  AgentMode,
  AgentRunRequestSchema,
  ConversationStateStructureSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { createProviderAdapter } from "../../providers/index.js";
import { createToolServices } from "../../engine/tool-services.js";
import { type TempStore, tempStore } from "../store/temp-store.js";

const MODEL = "contained-model";

function runRequest() {
  const userMessage = { text: "hello", messageId: randomUUID(), mode: AgentMode.AGENT };
  const value = create(AgentRunRequestSchema, {
    conversationId: randomUUID(),
    conversationState: create(ConversationStateStructureSchema),
    action: { action: { case: "userMessageAction", value: { userMessage, requestContext: {} } } },
    requestedModel: { modelId: MODEL },
  });
  return create(AgentClientMessageSchema, { message: { case: "runRequest", value } });
}

describe("engine containment", () => {
  let temp: TempStore;
  beforeEach(async () => (temp = await tempStore()));
  afterEach(async () => temp.cleanup());

  it("an exception while a run starts ends its request `internal` and is logged with its ids", async () => {
    const errors: Array<{ msg: string; fields: Record<string, unknown> }> = [];
    let throwOnce = true;
    const log: Logger = {
      // The unexpected exception: the log call right after the run is created throws once.
      info: (msg) => {
        if (msg === "run started" && throwOnce) {
          throwOnce = false;
          throw new Error("unexpected");
        }
      },
      warn: () => {},
      error: (msg, fields) => void errors.push({ msg, fields: fields as Record<string, unknown> }),
    };
    const service = new AgentService({
      store: temp.store,
      assets: loadPromptAssets(),
      models: [{ id: MODEL, provider: "openai-chat", baseUrl: "http://127.0.0.1:9/v1", apiKey: "k", model: "m" }],
      log,
      history: new HistoryCache(),
      adapterFor: createProviderAdapter,
      toolServices: createToolServices({}),
      timers: {},
      limits: {},
    });
    const ended = (requestId: string) =>
      new Promise<EndStream>((end) =>
        service.subscribe(requestId, { frame: () => {}, heartbeat: () => {}, handOver: () => {}, end }),
      );
    const first = randomUUID();
    const firstEnd = ended(first);
    service.append(first, 1n, runRequest());
    const end = await firstEnd;
    expect(end.ok).to.equal(false);
    expect(end.ok ? undefined : end.error.code).to.equal("internal");
    const crash = errors.find((e) => e.msg === "run crashed");
    expect(crash?.fields).to.include({ request_id: first });
    expect(crash?.fields.conversation_id).to.be.a("string");

    // The next request is served as usual (its provider is unreachable: it ends unavailable, not internal).
    const second = randomUUID();
    const secondEnd = ended(second);
    service.append(second, 1n, runRequest());
    const next = await secondEnd;
    expect(next.ok ? undefined : next.error.code).to.equal("unavailable");
    await service.close(1_000);
  });
});
