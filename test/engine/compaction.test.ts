// engine/compaction.ts (docs/protocol/cursor-run.md §8.10): the threshold per model, and for any history the
// compacted one keeps every tool call with its result, keeps the last round (or the last user message) verbatim, and
// the checkpoint's roots and summary fields follow it.
import { expect } from "chai";
import fc from "fast-check";
import { create, fromBinary } from "@bufbuild/protobuf";
import {
  ConversationStateStructureSchema,
  ConversationSummaryArchiveSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import { CheckpointBuilder } from "../../cursor/checkpoint-builder.js";
import { Compactor, compactionLimit, isSummary } from "../../engine/compaction.js";
import type { ResolvedModel } from "../../engine/models.js";
import type { ModeAssets } from "../../prompt/assets.js";
import { type CanonicalMessage, projectHistory } from "../../providers/messages.js";

const model = (contextWindow: number | undefined, maxOutputTokens?: number): ResolvedModel => ({
  endpoint: { kind: "anthropic", baseUrl: "http://127.0.0.1:1", apiKey: "k" },
  model: "m",
  images: true,
  promptCacheKey: false,
  contextWindow,
  maxOutputTokens,
  reasoningEffort: undefined,
});
const mode = (systemPrompt: string): ModeAssets => ({ mode: "agent", systemPrompt, runtimeTemplate: "", tools: [] });
const compaction: ModeAssets = {
  mode: "compaction",
  systemPrompt: "summarize",
  runtimeTemplate: "<timestamp>{{TIMESTAMP}}</timestamp>\n\n{{USER_QUERY}}\n",
  tools: [],
};

/** A conversation of turns: a runtime message, rounds of tool calls with their results, a final answer. */
const history = fc
  .array(
    fc.record({
      query: fc.string({ minLength: 1, maxLength: 200 }),
      rounds: fc.array(fc.array(fc.string({ maxLength: 400 }), { minLength: 1, maxLength: 3 }), { maxLength: 3 }),
      answer: fc.string({ maxLength: 200 }),
    }),
    { minLength: 1, maxLength: 6 },
  )
  .map((turns) => {
    const out: CanonicalMessage[] = [];
    turns.forEach((t, ti) => {
      out.push({ role: "user", content: t.query, origin: "runtime", eventId: `run-request:${ti}` });
      t.rounds.forEach((results, ri) => {
        const id = (k: number) => `call_${ti}_${ri}_${k}`;
        const toolCalls = results.map((_, k) => ({ id: id(k), name: "Read", argumentsJson: "{}", index: k }));
        out.push({ role: "assistant", text: "", toolCalls, toolRoundId: `round_${ti}_${ri}` });
        for (const [k, content] of results.entries())
          out.push({ role: "tool", toolCallId: id(k), toolName: "Read", content, isError: false });
      });
      out.push({ role: "assistant", text: t.answer, toolCalls: [] });
    });
    return out;
  });

describe("engine/compaction", () => {
  it("the threshold: the configured window (or the kind's default), less the output reserve, less 15 %", () => {
    expect(compactionLimit(model(10_000))).to.equal(8_500);
    // The reserve is the configured output limit, at most a quarter of the window.
    expect(compactionLimit(model(10_000, 1_000))).to.equal(7_650);
    expect(compactionLimit(model(10_000, 9_000))).to.equal(6_375);
    expect(compactionLimit(model(undefined))).to.equal(170_000);
  });

  it("for any history and window the compacted history keeps the last round whole and every call with its result", () => {
    fc.assert(
      fc.property(history, fc.integer({ min: 50, max: 3_000 }), (messages, window) => {
        const compactor = new Compactor(model(window), mode("system"), compaction, false);
        const builder = new CheckpointBuilder(
          create(ConversationStateStructureSchema),
          { role: "system", content: "system" },
          { kind: "none" },
          "r",
        );
        for (const m of messages) builder.addRoot(m);
        const measured = compactor.measure(messages);
        const request = compactor.request(messages);
        const cut = compactor.summarized;
        expect(measured.summarizable).to.equal(cut);
        expect(request.tools).to.deep.equal([]);
        expect(request.messages.slice(0, -1)).to.deep.equal(projectHistory(messages.slice(0, cut)));
        const compacted = compactor.apply(messages, "the summary", builder, { requestId: "r", callIndex: 3 });
        expect(isSummary(compacted[0]!)).to.equal(true);
        const kept = compacted.slice(1);
        expect(kept).to.deep.equal(messages.slice(cut));
        if (kept.length) expect(kept[0]!.role, "the tail never starts with a tool result").to.not.equal("tool");
        // The last assistant message or user message is kept, with everything after it.
        const lastNonTool = messages.findLastIndex((m) => m.role !== "tool");
        expect(cut).to.be.at.most(lastNonTool);
        // Every projected call has its result: nothing of the kept tail is dropped by the projection.
        const projected = projectHistory(compacted);
        const calls = projected.flatMap((m) => (m.role === "assistant" ? m.toolCalls.map((c) => c.id) : []));
        const results = projected.flatMap((m) => (m.role === "tool" ? [m.toolCallId] : []));
        expect(results).to.have.members(calls);
        expect(projected.filter((m) => m.role === "assistant")).to.have.length(
          kept.filter((m) => m.role === "assistant").length,
        );
        // The checkpoint: system, summary, the kept tail; the archive lists what the summary replaced.
        const { state } = builder.snapshot({ pending: [], usedTokens: 0, maxTokens: 0 });
        expect(state.rootPromptMessagesJson).to.have.length(2 + kept.length);
        expect(state.selfSummaryCount).to.equal(1);
        expect(state.summaryArchives).to.deep.equal([state.summaryArchive]);
      }),
      { numRuns: 200 },
    );
  });

  it("measures a history that grows call by call, or another one after it, as it measures it afresh", () => {
    fc.assert(
      fc.property(history, history, fc.integer({ min: 50, max: 100_000 }), (first, other, window) => {
        const fresh = () => new Compactor(model(window), mode("system"), compaction, false);
        const compactor = fresh();
        const grown: CanonicalMessage[] = [];
        for (const m of first) {
          grown.push(m);
          expect(compactor.measure(grown)).to.deep.equal(fresh().measure(grown));
        }
        // A different array, as long or longer: a reset history is counted from its start.
        const next = [...other, ...first];
        expect(compactor.measure(next)).to.deep.equal(fresh().measure(next));
      }),
      { numRuns: 100 },
    );
  });

  it("the archive lists the replaced roots and the summary root", () => {
    const messages: CanonicalMessage[] = [
      { role: "user", content: "first question", origin: "runtime" },
      { role: "assistant", text: "first answer", toolCalls: [] },
      { role: "user", content: "x".repeat(4_000), origin: "runtime" },
    ];
    const builder = new CheckpointBuilder(
      create(ConversationStateStructureSchema),
      { role: "system", content: "system" },
      { kind: "none" },
      "r",
    );
    const roots = messages.map((m) => builder.addRoot(m));
    const compactor = new Compactor(model(2_000), mode("system"), compaction, false);
    compactor.request(messages);
    expect(compactor.summarized).to.equal(2);
    compactor.apply(messages, "asked and answered", builder, { requestId: "r", callIndex: 1 });
    const { state, sets } = builder.snapshot({ pending: [], usedTokens: 0, maxTokens: 0 });
    const archiveId = Buffer.from(state.summaryArchive!).toString("hex");
    const archive = sets.find((b) => Buffer.from(b.id).toString("hex") === archiveId)!;
    const decoded = fromBinary(ConversationSummaryArchiveSchema, archive.data);
    expect(decoded.summarizedMessages).to.deep.equal(roots.slice(0, 2));
    expect(decoded.summary).to.equal("asked and answered");
    expect(decoded.summaryMessage).to.deep.equal(state.rootPromptMessagesJson[1]);
    expect(state.rootPromptMessagesJson[2]).to.deep.equal(roots[2]);
  });
});
