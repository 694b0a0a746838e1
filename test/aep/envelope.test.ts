// The AEP v1 codec (docs/protocol/aep.md): every client kind validates; anything else is a value, never an exception.
import { expect } from "chai";
import { decodeClientFrame, priorityOf, serverEnvelope } from "../../aep/wire/envelope.js";

const frame = (type: string, data: unknown, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    version: "aep/v1",
    id: "cli_1",
    seq: 0,
    session_id: "",
    timestamp: 1,
    event: { type, data },
    ...extra,
  });

describe("AEP envelope codec", () => {
  const valid: Array<[string, unknown]> = [
    ["init", { worker: "claude-code", workdir: "/w", session_key: "k", token: "t", client_version: "1.0" }],
    ["input", { content: "hi", metadata: { source: "test" } }],
    ["permission_response", { id: "p", allowed: false, reason: "no" }],
    ["question_response", { id: "q", answers: { "Which?": "A" } }],
    ["elicitation_response", { id: "e", action: "accept", content: { name: "x" } }],
    ["ping", {}],
    ...(["terminate", "delete", "gc", "reset", "stop"] as const).map((action): [string, unknown] => [
      "control",
      { action },
    ]),
    ["control", { action: "cd", workdir: "/elsewhere" }],
  ];
  for (const [type, data] of valid) {
    it(`accepts ${type}${type === "control" ? ` ${(data as { action: string }).action}` : ""}`, () => {
      const decoded = decodeClientFrame(frame(type, data));
      expect(decoded.ok, JSON.stringify(decoded)).to.equal(true);
      if (decoded.ok) expect(decoded.envelope.event).to.deep.equal({ type, data });
    });
  }

  it("accepts an envelope without seq, timestamp or session_id, and ping without data", () => {
    const decoded = decodeClientFrame(JSON.stringify({ version: "aep/v1", id: "x", event: { type: "ping" } }));
    expect(decoded).to.deep.include({ ok: true });
  });

  const invalid: Array<[string, string, string]> = [
    ["not JSON", "{oops", "INVALID_MESSAGE"],
    ["an unknown kind", frame("teleport", {}), "NOT_SUPPORTED"],
    ["a server kind sent by a client", frame("done", { success: true }), "NOT_SUPPORTED"],
    ["input without content", frame("input", { text: "hi" }), "INVALID_MESSAGE"],
    [
      "input with blank content (the API refuses an empty text block)",
      frame("input", { content: " \n" }),
      "INVALID_MESSAGE",
    ],
    ["a permission answer without allowed", frame("permission_response", { id: "p" }), "INVALID_MESSAGE"],
    ["an unknown control action", frame("control", { action: "explode" }), "INVALID_MESSAGE"],
    ["an unknown worker", frame("init", { worker: "opencode" }), "INVALID_MESSAGE"],
    ["a missing id", JSON.stringify({ version: "aep/v1", event: { type: "ping" } }), "INVALID_MESSAGE"],
    ["another version", frame("ping", {}, { version: "aep/v2" }), "VERSION_MISMATCH"],
    ["an array", "[]", "INVALID_MESSAGE"],
  ];
  for (const [what, raw, code] of invalid) {
    it(`refuses ${what} with ${code}`, () => {
      const decoded = decodeClientFrame(raw);
      expect(decoded).to.deep.include({ ok: false, code });
    });
  }

  // Names every plain object answers to: a kind looked up with `in` or `[]` would find a function there.
  const prototypeNames = [...Object.getOwnPropertyNames(Object.prototype), "__proto__"];
  it("refuses every Object.prototype name as a kind with NOT_SUPPORTED, never an exception", () => {
    for (const name of prototypeNames) {
      expect(decodeClientFrame(frame(name, {})), name).to.deep.include({ ok: false, code: "NOT_SUPPORTED" });
      expect(decodeClientFrame(frame(name, undefined)), name).to.deep.include({ ok: false, code: "NOT_SUPPORTED" });
    }
  });

  it("refuses every Object.prototype name as a control action", () => {
    for (const name of prototypeNames)
      expect(decodeClientFrame(frame("control", { action: name })), name).to.deep.include({ ok: false });
  });

  it("builds server envelopes with evt_ ids and puts input.ack and pong in control priority", () => {
    const e = serverEnvelope("sess_1", 7, { type: "done", data: { success: true } }, 123);
    expect(e).to.deep.include({ version: "aep/v1", seq: 7, priority: "data", session_id: "sess_1", timestamp: 123 });
    expect(e.id).to.match(/^evt_[0-9a-f-]{36}$/);
    expect(
      priorityOf({ type: "input.ack", data: { client_message_id: "c", execution_id: "e", status: "accepted" } }),
    ).to.equal("control");
    expect(priorityOf({ type: "pong", data: {} })).to.equal("control");
    expect(priorityOf({ type: "message.delta", data: { message_id: "m", content: "x" } })).to.equal("data");
  });
});
