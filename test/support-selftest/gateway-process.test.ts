import { expect } from "chai";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { killAllGateways, startGatewayProcess } from "../support/gateway-process.js";

const announcing = "test/support-selftest/fixtures/announcing-server.ts";

describe("gateway child process harness", () => {
  let dataDir: string;
  beforeEach(async () => (dataDir = await mkdtemp(join(tmpdir(), "byok-selftest-"))));
  afterEach(() => rm(dataDir, { recursive: true, force: true }));
  after(killAllGateways);

  it("starts the entry with serve flags, waits for the listening line and passes config and env", async () => {
    const gw = await startGatewayProcess({
      entry: announcing,
      dataDir,
      config: { models: [{ id: "m", provider: "openai-chat" }] },
      upstream: "http://127.0.0.1:9",
      env: { SELFTEST_MARK: "yes" },
    });
    const seen = (await (await fetch(gw.url)).json()) as { args: string[]; config: string; env: string };
    expect(seen.args.slice(0, 6)).to.deep.equal(["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir"]);
    expect(seen.args).to.include(dataDir);
    expect(seen.args.slice(-2)).to.deep.equal(["--upstream", "http://127.0.0.1:9"]);
    expect(seen.config).to.match(/id: m/);
    expect(seen.env).to.equal("yes");
    expect(gw.stderrLines()).to.include("warming up");
    expect(await gw.stop()).to.deep.equal({ code: 0, signal: null });
  });

  it("reports an early exit with the child's stderr", async () => {
    const started = startGatewayProcess({
      entry: "test/support-selftest/fixtures/failing-server.ts",
      dataDir,
      config: "models: [",
    });
    const err = await started.then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).to.match(/exited early with code 3/);
    expect(err?.message).to.include("config invalid: models[0].baseUrl is required");
  });

  it("SIGKILLs and throws when the child ignores the stop signal", async () => {
    const gw = await startGatewayProcess({ entry: announcing, dataDir, config: {}, env: { IGNORE_SIGTERM: "1" } });
    const err = await gw.stop("SIGTERM", 300).then(
      () => undefined,
      (e: Error) => e,
    );
    expect(err?.message).to.match(/did not exit within 300 ms of SIGTERM/);
    expect(() => process.kill(gw.pid, 0)).to.throw(); // gone
  });

  it("killAllGateways ends every child still running", async () => {
    const gw = await startGatewayProcess({ entry: announcing, dataDir, config: {} });
    await killAllGateways();
    expect(() => process.kill(gw.pid, 0)).to.throw();
  });
});
