import { expect } from "chai";
import { type FakeUpstream, startFakeUpstream } from "../support/fake-upstream.js";

describe("fake upstream (relay target)", () => {
  let upstream: FakeUpstream;
  beforeEach(async () => (upstream = await startFakeUpstream()));
  afterEach(() => upstream.close());

  it("records method, url, headers and body, and answers the scripted response", async () => {
    upstream.enqueue({ status: 201, headers: { "x-from": "upstream" }, body: "created" });
    const res = await fetch(`${upstream.url}/aiserver.v1.AiService/Thing?q=1`, {
      method: "POST",
      headers: { "x-cursor-checksum": "abc" },
      body: new Uint8Array([0, 1, 2, 255]),
    });
    expect(res.status).to.equal(201);
    expect(res.headers.get("x-from")).to.equal("upstream");
    expect(await res.text()).to.equal("created");
    const [req] = await upstream.waitForRequests(1);
    expect(req!.method).to.equal("POST");
    expect(req!.url).to.equal("/aiserver.v1.AiService/Thing?q=1");
    expect(req!.headers["x-cursor-checksum"]).to.equal("abc");
    expect([...req!.body]).to.deep.equal([0, 1, 2, 255]);
  });

  it("streams chunked responses piece by piece", async () => {
    upstream.enqueue({ chunks: [{ data: "one" }, { data: "two", delayMs: 150 }] });
    const started = Date.now();
    const reader = (await fetch(upstream.url)).body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).to.equal("one");
    expect(Date.now() - started).to.be.below(140);
  });

  it("answers unscripted requests with a loud 599 naming the request, or the default when set", async () => {
    const loud = await fetch(`${upstream.url}/nowhere`);
    expect(loud.status).to.equal(599);
    expect(await loud.text()).to.include("GET /nowhere");
    upstream.setDefault({ status: 204 });
    expect((await fetch(`${upstream.url}/x`)).status).to.equal(204);
  });
});
