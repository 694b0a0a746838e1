// AEP control actions on the session core (scripted worker): reset, terminate, delete, gc and cd.
import { expect } from "chai";
import { mkdtemp } from "node:fs/promises";
import { join } from "node:path";
import { runPlainTurn, useScriptedRig } from "./scripted-rig.js";

describe("AEP control actions (scripted worker)", () => {
  const rig = useScriptedRig();
  const { open } = rig;

  it("after terminate, controls and answers get SESSION_TERMINATED rather than silence", async () => {
    const { client } = await open();
    client.send("control", { action: "terminate" });
    const from = client.mark();
    await client.next((e) => e.event.type === "state" && (e.event.data as { state: string }).state === "terminated");
    for (const [type, data] of [
      ["control", { action: "stop" }],
      ["control", { action: "gc" }],
      ["permission_response", { id: "p", allowed: true }],
    ] as const) {
      const mark = client.mark();
      client.send(type, data);
      expect((await client.next("error", mark)).event.data).to.deep.include({ code: "SESSION_TERMINATED" });
    }
    expect(client.kinds(from).filter((k) => k === "error")).to.have.length(3);
  });

  it("control reset gives the worker a new session; terminate ends the session; later inputs are refused", async () => {
    const { client } = await open();
    const from = await runPlainTurn(client, "m1", "go");
    const first = rig.factory.last;
    first.emit(
      { type: "worker.ready", workerSessionId: first.options.workerSessionId },
      { type: "turn.finished", outcome: "completed" },
    );
    await client.next("runtime.execution.completed", from);
    const beforeReset = client.mark();
    client.send("control", { action: "reset" });
    expect(
      (
        await client.next(
          (e) => e.event.type === "state" && (e.event.data as { state: string }).state === "idle",
          beforeReset,
        )
      ).event.data,
    ).to.deep.include({ message: "context reset" });
    const next = await runPlainTurn(client, "m2", "fresh");
    expect(rig.factory.last.options.workerSessionId).to.not.equal(first.options.workerSessionId);
    expect(rig.factory.last.options.resume).to.equal(false);
    client.send("control", { action: "terminate" });
    const done = await client.next("done", next);
    expect(done.event.data).to.deep.equal({ success: false, reason: "terminate" });
    await client.next(
      (e) => e.event.type === "state" && (e.event.data as { state: string }).state === "terminated",
      next,
    );
    client.send("input", { content: "anyone?" }, "m3");
    expect((await client.next("error", next)).event.data).to.deep.include({ code: "SESSION_TERMINATED" });
  });

  it("control gc releases the worker (the next input resumes it); cd moves the session to another directory with a new worker session", async () => {
    const { client } = await open();
    let from = await runPlainTurn(client, "m1", "go");
    const first = rig.factory.last;
    first.emit(
      { type: "worker.ready", workerSessionId: first.options.workerSessionId },
      { type: "turn.finished", outcome: "completed" },
    );
    await client.next("done", from);
    client.send("control", { action: "gc" });
    await client.next(
      (e) => e.event.type === "state" && (e.event.data as { message?: string }).message === "worker released",
      from,
    );
    expect(first.killed).to.equal(true);
    from = await runPlainTurn(client, "m2", "again");
    expect(rig.factory.last.options).to.deep.include({ workerSessionId: first.options.workerSessionId, resume: true });
    rig.factory.last.emit({ type: "turn.finished", outcome: "completed" });
    await client.next("done", from);

    const elsewhere = await mkdtemp(join(rig.workdir, "cd-")); // removed with the workdir
    client.send("control", { action: "cd", workdir: elsewhere });
    await client.next(
      (e) =>
        e.event.type === "state" && (e.event.data as { message?: string }).message === `working directory ${elsewhere}`,
      from,
    );
    await runPlainTurn(client, "m3", "there");
    expect(rig.factory.last.options).to.deep.include({ workdir: elsewhere, resume: false });
    expect(rig.factory.last.options.workerSessionId).to.not.equal(first.options.workerSessionId);
    client.send("control", { action: "cd" });
    expect((await client.next("error", from)).event.data).to.deep.include({ code: "INVALID_MESSAGE" });
  });

  it("control delete forgets the session: the same key later opens a new one", async () => {
    const { client, state } = await open({ session_key: "gone" });
    client.send("control", { action: "delete" });
    await client.closed;
    const next = await open({ session_key: "gone" });
    expect(next.state.event.data).to.deep.equal({ state: "created" });
    expect(next.state.session_id).to.not.equal(state.session_id);
  });
});
