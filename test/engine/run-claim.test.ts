// Run identity (docs/protocol/cursor-run.md §13): an execution whose claim of its runs row fails answers only its
// own client and never writes an ending into the row it could not claim.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { AgentService } from "../../engine/agent-service.js";
import { HistoryCache } from "../../engine/history-cache.js";
import { createToolServices } from "../../engine/tool-services.js";
import type { EndStream } from "../../cursor/errors.js";
import { loadPromptAssets } from "../../prompt/assets.js";
import {
  AgentClientMessageSchema,
  AgentMode,
  AgentRunRequestSchema,
  ConversationStateStructureSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { createProviderAdapter } from "../../providers/index.js";
import { type TempStore, tempStore } from "../store/temp-store.js";

const MODEL = "claim-model";

describe("run claim", () => {
  let temp: TempStore;
  beforeEach(async () => (temp = await tempStore()));
  afterEach(async () => temp.cleanup());

  it("a failed claim ends its own request and leaves the row of the execution that holds the id untouched", async () => {
    const requestId = randomUUID();
    await temp.store.createRun({ runId: requestId, conversationId: "root-conversation", model: "m" });
    const store = {
      ...temp.store,
      beginRun: () => Promise.reject(new Error("the run's row is held by another execution")),
    };
    const silent = { info: () => {}, warn: () => {}, error: () => {} };
    const service = new AgentService({
      store,
      assets: loadPromptAssets(),
      models: [{ id: MODEL, provider: "openai-chat", baseUrl: "http://127.0.0.1:9/v1", apiKey: "k", model: "m" }],
      log: silent,
      history: new HistoryCache(),
      adapterFor: createProviderAdapter,
      timers: {},
      limits: {},
      toolServices: createToolServices({}),
    });
    const ended = new Promise<EndStream>((end) =>
      service.subscribe(requestId, { frame: () => {}, heartbeat: () => {}, handOver: () => {}, end }),
    );
    const userMessage = { text: "hello", messageId: randomUUID(), mode: AgentMode.AGENT };
    const value = create(AgentRunRequestSchema, {
      conversationId: "retry-conversation",
      conversationState: create(ConversationStateStructureSchema),
      action: { action: { case: "userMessageAction", value: { userMessage, requestContext: {} } } },
      requestedModel: { modelId: MODEL },
    });
    service.append(requestId, 1n, create(AgentClientMessageSchema, { message: { case: "runRequest", value } }));
    const end = await ended;
    expect(end.ok ? undefined : end.error.message).to.contain("held by another execution");
    await service.close(1_000);
    expect(await temp.store.getRun(requestId)).to.include({ status: "running", conversationId: "root-conversation" });
  });
});
