// Worker events → AEP events for the content of a turn (pure).
import { expect } from "chai";
import {
  closeOpenMessages,
  initialMapping,
  interactionRequest,
  mapContent,
  type MappingState,
} from "../../aep/wire/mapping.js";
import type { ServerEvent } from "../../aep/wire/envelope.js";
import type { WorkerEvent } from "../../workers/types.js";

function run(events: WorkerEvent[]): { state: MappingState; out: ServerEvent[] } {
  let state = initialMapping;
  const out: ServerEvent[] = [];
  for (const e of events) {
    const r = mapContent(state, e as Parameters<typeof mapContent>[1]);
    state = r.state;
    out.push(...r.events);
  }
  return { state, out };
}

describe("AEP mapping of worker events", () => {
  it("streams a text block as start, deltas, end and the whole message", () => {
    const { out, state } = run([
      { type: "text.delta", blockId: "b", text: "a" },
      { type: "text.delta", blockId: "b", text: "b" },
      { type: "text.completed", blockId: "b", text: "ab" },
    ]);
    expect(out.map((e) => e.type)).to.deep.equal([
      "message.start",
      "message.delta",
      "message.delta",
      "message.end",
      "message",
    ]);
    expect(out.at(-1)!.data).to.deep.equal({ id: "b", role: "assistant", content: "ab", content_type: "text" });
    expect(state.openText).to.deep.equal([]);
  });

  it("closes a retracted block without offering it as the answer", () => {
    const { out } = run([
      { type: "text.delta", blockId: "b", text: "par" },
      { type: "text.completed", blockId: "b", text: "par", abandoned: true },
      { type: "text.completed", blockId: "never-streamed", text: "x", abandoned: true },
      { type: "reasoning.completed", blockId: "r", text: "x", abandoned: true },
    ]);
    expect(out.map((e) => e.type)).to.deep.equal(["message.start", "message.delta", "message.end"]);
  });

  it("closes blocks still open when a turn ends", () => {
    const { state } = run([{ type: "text.delta", blockId: "b", text: "cut" }]);
    expect(closeOpenMessages(state)).to.deep.equal([{ type: "message.end", data: { message_id: "b" } }]);
  });

  it("keeps a permission request's tool, input and description; an unreadable one still has a tool name", () => {
    expect(
      interactionRequest({
        type: "interaction.requested",
        id: "p",
        kind: "permission",
        payload: { tool_name: "Write", description: "Write a file", input: { file_path: "/a" } },
      }).data,
    ).to.deep.equal({
      id: "p",
      tool_name: "Write",
      description: "Write a file",
      args: ['{"file_path":"/a"}'],
      input_raw: { file_path: "/a" },
    });
    expect(
      interactionRequest({ type: "interaction.requested", id: "p", kind: "permission", payload: {} }).data,
    ).to.deep.include({ tool_name: "unknown" });
  });
});
