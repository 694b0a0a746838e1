// Who may open an AEP session: init first, loopback Origins only, an existing workdir, and the token when one is set.
import { expect } from "chai";
import { startAepListener, type AepListener } from "../../aep/listener.js";
import { workdirResolver } from "../../aep/workdir.js";
import type { Logger } from "../../log/logger.js";
import { tempStore, type TempStore } from "../store/temp-store.js";
import { AepClient, openSession } from "./aep-client.js";
import { ScriptedFactory } from "./scripted-worker.js";

const log: Logger = { info: () => {}, warn: () => {}, error: () => {} };

describe("AEP listener admission", () => {
  let temp: TempStore;
  let listener: AepListener;
  beforeEach(async () => {
    temp = await tempStore();
    listener = await startAepListener({
      port: 0,
      host: "127.0.0.1",
      store: temp.store.aep,
      factory: new ScriptedFactory(),
      log,
      workdirFor: workdirResolver({ dataDir: temp.dataDir }),
    });
  });
  afterEach(async () => {
    await listener.close();
    await temp.cleanup();
  });

  it("refuses a workdir that does not exist", async () => {
    const client = await AepClient.connect(listener.url);
    client.send("init", { workdir: "/definitely/not/here" });
    expect((await client.next("error")).event.data).to.deep.include({ code: "INVALID_MESSAGE" });
    await client.closed;
  });

  it("refuses frames before init and a browser Origin that is not loopback", async () => {
    const client = await AepClient.connect(listener.url);
    client.send("input", { content: "too early" });
    expect((await client.next("error")).event.data).to.deep.include({ code: "PROTOCOL_VIOLATION" });
    await client.close();
    let refused = "";
    await AepClient.connect(listener.url, { headers: { Origin: "https://evil.example" } }).catch(
      (e: Error) => (refused = e.message),
    );
    expect(refused).to.contain("403");
    const local = await AepClient.connect(listener.url, { headers: { Origin: "http://localhost:3000" } });
    await local.close();
  });
});

describe("AEP listener with a token", () => {
  let temp: TempStore;
  let listener: AepListener;
  beforeEach(async () => {
    temp = await tempStore();
    listener = await startAepListener({
      port: 0,
      host: "127.0.0.1",
      token: "s3cret",
      store: temp.store.aep,
      factory: new ScriptedFactory(),
      log,
      workdirFor: workdirResolver({ dataDir: temp.dataDir }),
    });
  });
  afterEach(async () => {
    await listener.close();
    await temp.cleanup();
  });

  it("accepts the token as a Bearer header or as init data, refuses it missing or wrong", async () => {
    expect((await openSession(listener.url, { token: "s3cret" })).state.event.data).to.deep.equal({ state: "created" });
    const bearer = await AepClient.connect(listener.url, { headers: { Authorization: "Bearer s3cret" } });
    bearer.send("init", {});
    expect((await bearer.next("state")).event.data).to.deep.equal({ state: "created" });
    let refused = "";
    await AepClient.connect(listener.url, { headers: { Authorization: "Bearer nope" } }).catch(
      (e: Error) => (refused = e.message),
    );
    expect(refused).to.contain("401");
    for (const [data, code] of [
      [{}, "AUTH_REQUIRED"],
      [{ token: "nope" }, "UNAUTHORIZED"],
    ] as const) {
      const c = await AepClient.connect(listener.url);
      c.send("init", data);
      expect((await c.next("error")).event.data).to.deep.include({ code });
      await c.closed;
    }
  });

  it("refuses to start on a non-loopback address without a token", async () => {
    let error = "";
    await startAepListener({
      port: 0,
      host: "0.0.0.0",
      store: temp.store.aep,
      factory: new ScriptedFactory(),
      log,
      workdirFor: async () => "/",
    }).catch((e: Error) => (error = e.message));
    expect(error).to.contain("aep.token is required");
  });
});
