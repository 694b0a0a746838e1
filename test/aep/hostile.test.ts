// Hostile frames on a real AEP socket (scripted worker): Object.prototype names in every client-chosen position get
// an error envelope and the connection and session go on.
import { expect } from "chai";
import type { AepStore } from "../../store/index.js";
import { AepClient } from "./aep-client.js";
import { runPlainTurn, useScriptedRig, RIG_TOKEN } from "./scripted-rig.js";

const prototypeNames = [...Object.getOwnPropertyNames(Object.prototype), "__proto__"];

describe("AEP hostile frames (scripted worker)", () => {
  const rig = useScriptedRig();

  it("an Object.prototype name as kind, before init, gets NOT_SUPPORTED and init still works", async () => {
    const client = await AepClient.connect(rig.listener.url);
    for (const name of prototypeNames) {
      const from = client.mark();
      client.ws.send(JSON.stringify({ version: "aep/v1", id: "x", event: { type: name } }));
      expect((await client.next("error", from)).event.data, name).to.deep.include({
        code: "NOT_SUPPORTED",
        client_message_id: "x",
      });
    }
    client.send("init", { token: RIG_TOKEN, workdir: rig.workdir });
    expect((await client.next("state")).event.data).to.deep.equal({ state: "created" });
    await client.close();
  });

  it("an answer whose id is an Object.prototype name is refused; the open request still takes its answer", async () => {
    const { client } = await rig.open();
    const from = await runPlainTurn(client, "m1", "go");
    const worker = rig.factory.last;
    worker.beginTurn();
    worker.emit({ type: "interaction.requested", id: "p1", kind: "permission", payload: { tool_name: "Bash" } });
    await client.next("permission_request", from);
    for (const name of prototypeNames) {
      const mark = client.mark();
      client.send("permission_response", { id: name, allowed: true });
      expect((await client.next("error", mark)).event.data, name).to.deep.include({ code: "INVALID_MESSAGE" });
      client.send("question_response", { id: name, answers: { [name]: "x" } });
      expect((await client.next("error", mark + 1)).event.data, name).to.deep.include({ code: "INVALID_MESSAGE" });
    }
    client.send("permission_response", { id: "p1", allowed: true });
    await new Promise<void>((resolve) =>
      (function poll() {
        worker.answers.length > 0 ? resolve() : setImmediate(poll);
      })(),
    );
    expect(worker.answers).to.have.length(1);
    worker.emit({ type: "turn.finished", outcome: "completed" });
    expect((await client.next("done", from)).event.data).to.deep.include({ success: true });
    await client.close();
  });

  it("binary and non-JSON frames get INVALID_MESSAGE and the session goes on", async () => {
    const { client } = await rig.open();
    const from = client.mark();
    client.ws.send(Buffer.from([0, 1, 2, 3]));
    client.ws.send("{not json");
    client.ws.send(JSON.stringify({ version: "aep/v1", id: "x", event: { type: "input", data: { __proto__: 1 } } }));
    await client.next((e) => e.event.type === "error" && client.of("error", from).length === 3, from);
    expect(client.of("error", from).map((e) => e.code)).to.deep.equal(Array(3).fill("INVALID_MESSAGE"));
    await runPlainTurn(client, "m1", "still here");
    rig.factory.last.emit({ type: "turn.finished", outcome: "completed" });
    await client.next("done", from);
    await client.close();
  });

  it("a session whose machine throws ends that connection with INTERNAL_ERROR; the gateway and the session go on", async () => {
    const store = rig.temp.store.aep;
    // A store that throws synchronously inside the session machine's persist action: an unexpected exception.
    const throwing = new Proxy(store, {
      get: (target, name, receiver) =>
        name === "updateSession"
          ? (id: string, update: Parameters<AepStore["updateSession"]>[1]) => {
              if (update.workerStarted) throw new Error("boom");
              return target.updateSession(id, update);
            }
          : Reflect.get(target, name, receiver),
    });
    await rig.listener.close();
    rig.listener = await rig.listen({ store: throwing });
    const { client } = await rig.open({ session_key: "k" });
    const from = await runPlainTurn(client, "m1", "go");
    rig.factory.last.emit({
      type: "worker.ready",
      workerSessionId: "w",
      model: "m",
      tools: [],
      permissionMode: "default",
    });
    expect((await client.next("error", from)).event.data).to.deep.include({ code: "INTERNAL_ERROR" });
    expect((await client.closed).code).to.equal(1011);
    expect(rig.errors.join("\n")).to.include("aep session machine failed");
    rig.errors.length = 0;
    const again = await rig.open({ session_key: "k" });
    expect(again.client.sessionId).to.equal(client.sessionId);
    await again.client.close();
  });
});
