// Which side serves a run, and the bounded memory of request_ids handed to the upstream.
import { expect } from "chai";
import { create } from "@bufbuild/protobuf";
import { RequestedModelSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { routeRun, UpstreamRequests } from "../../engine/run-route.js";
import type { ModelConfig } from "../../engine/config.js";

const models = [
  { id: "mine", provider: "openai-chat", baseUrl: "http://127.0.0.1:1/v1", apiKey: "k", model: "m" },
] as ModelConfig[];

describe("routeRun", () => {
  it("serves configured models and requests carrying the user's own credentials here, all else upstream", () => {
    const route = (init: Parameters<typeof create<typeof RequestedModelSchema>>[1]) =>
      routeRun(models, create(RequestedModelSchema, init)).route;
    expect(route({ modelId: "mine" })).to.equal("local");
    expect(route({ modelId: "gpt-x", credentials: { case: "apiKeyCredentials", value: { apiKey: "sk" } } })).to.equal(
      "local",
    );
    expect(route({ modelId: "gpt-x", credentials: { case: "azureCredentials", value: {} } })).to.equal("local");
    expect(route({ modelId: "claude", credentials: { case: "bedrockCredentials", value: {} } })).to.equal("local");
    expect(route({ modelId: "gpt-x", credentials: { case: "apiKeyCredentials", value: { apiKey: "" } } })).to.equal(
      "upstream",
    );
    expect(route({ modelId: "composer-1" })).to.equal("upstream");
    expect(routeRun(models, undefined).route).to.equal("upstream");
  });

  it("says why, in the words of the routing log line", () => {
    const reason = (init: Parameters<typeof create<typeof RequestedModelSchema>>[1]) =>
      routeRun(models, create(RequestedModelSchema, init)).reason;
    expect(reason({ modelId: "mine" })).to.equal("configured model");
    expect(reason({ modelId: "gpt-x", credentials: { case: "apiKeyCredentials", value: { apiKey: "sk" } } })).to.equal(
      "user key",
    );
    expect(reason({ modelId: "gpt-4.1-typo" })).to.equal('upstream (model "gpt-4.1-typo" is not configured)');
  });
});

describe("UpstreamRequests", () => {
  it("forgets the oldest beyond its bound", () => {
    const seen = new UpstreamRequests(2, 60_000);
    seen.add("a", 0);
    seen.add("b", 1);
    seen.add("c", 2);
    expect([seen.has("a", 3), seen.has("b", 3), seen.has("c", 3)]).to.deep.equal([false, true, true]);
  });

  it("expires an entry a TTL after its last use, and each use extends it", () => {
    const seen = new UpstreamRequests(10, 100);
    seen.add("a", 0);
    expect(seen.has("a", 90)).to.equal(true);
    expect(seen.has("a", 180)).to.equal(true);
    expect(seen.has("a", 281)).to.equal(false);
    expect(seen.has("a", 282)).to.equal(false);
  });
});
