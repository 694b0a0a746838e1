// The decoded-history cache (issue 6 follow-up): a run reads and decodes only the roots its checkpoint does not
// share with the conversation's last loaded history; a different checkpoint never gets a message it was not
// decoded from; the cache stays within its byte bound.
import { create } from "@bufbuild/protobuf";
import { expect } from "chai";
import { ConversationStateStructureSchema } from "../../proto/gen/agent/v1/agent_pb.js";
import { HistoryCache } from "../../engine/history-cache.js";
import { loadHistory, rootIds } from "../../engine/run-setup.js";
import type { CanonicalMessage } from "../../providers/messages.js";
import type { Store } from "../../store/index.js";
import { blobId } from "../../cursor/blob-graph.js";
import { encodeRootMessage } from "../../cursor/root-messages.js";
import { type TempStore, tempStore } from "../store/temp-store.js";

const system: CanonicalMessage = { role: "system", content: "You are a coding agent." };
const user = (text: string): CanonicalMessage => ({ role: "user", content: text, origin: "user" });

describe("history cache: decoded roots reused by content-addressed prefix", () => {
  let t: TempStore;
  let fetched: number[];
  let store: Store;
  beforeEach(async () => {
    t = await tempStore();
    fetched = [];
    // The real store, with the number of root blobs each run reads recorded.
    store = { ...t.store, getBlobs: (ids) => (fetched.push(ids.length), t.store.getBlobs(ids)) };
  });
  afterEach(() => t.cleanup());

  async function checkpoint(...messages: CanonicalMessage[]) {
    const blobs = messages.map((m) => encodeRootMessage(m)).map((data) => ({ id: blobId(data), data }));
    await t.store.putBlobs(blobs);
    return create(ConversationStateStructureSchema, { rootPromptMessagesJson: blobs.map((b) => b.id) });
  }

  it("decodes only the roots after the shared prefix on the next run of the conversation", async () => {
    const cache = new HistoryCache();
    const first = await checkpoint(system, user("one"), user("two"));
    expect(await loadHistory(store, cache, "c", first)).to.deep.equal([user("one"), user("two")]);
    const next = await checkpoint(system, user("one"), user("two"), user("three"));
    expect(await loadHistory(store, cache, "c", next)).to.deep.equal([user("one"), user("two"), user("three")]);
    expect(fetched).to.deep.equal([3, 1]);
  });

  it("a different checkpoint misses past the point where it differs, and another conversation misses entirely", async () => {
    const cache = new HistoryCache();
    await loadHistory(store, cache, "c", await checkpoint(system, user("one"), user("two")));
    const edited = await checkpoint(system, user("one"), user("TWO, edited"));
    expect(await loadHistory(store, cache, "c", edited)).to.deep.equal([user("one"), user("TWO, edited")]);
    expect(await loadHistory(store, cache, "other", edited)).to.deep.equal([user("one"), user("TWO, edited")]);
    const shorter = await checkpoint(system, user("one"));
    expect(await loadHistory(store, cache, "c", shorter)).to.deep.equal([user("one")]);
    expect(fetched).to.deep.equal([3, 1, 3, 0]);
  });

  it("stays within its byte bound, dropping the least recently used conversation, and clear() forgets all", async () => {
    const a = await checkpoint(system, user("a".repeat(400)));
    const b = await checkpoint(system, user("b".repeat(400)));
    const bytes = (await t.store.getBlobs(a.rootPromptMessagesJson)).reduce((n, blob) => n + blob!.byteLength, 0);
    const cache = new HistoryCache(bytes + 10); // room for one conversation
    await loadHistory(store, cache, "a", a);
    await loadHistory(store, cache, "b", b);
    expect(cache.prefix("a", rootIds(a)).messages).to.have.length(0);
    expect(cache.prefix("b", rootIds(b)).messages).to.have.length(2);
    cache.clear();
    expect(cache.prefix("b", rootIds(b)).messages).to.have.length(0);
  });

  it("holds nothing for an empty checkpoint (a new conversation's first run), so the entry count stays bounded", async () => {
    const cache = new HistoryCache();
    const empty = create(ConversationStateStructureSchema, {});
    for (let i = 0; i < 3; i++) expect(await loadHistory(store, cache, `new-${i}`, empty)).to.deep.equal([]);
    expect(cache.conversations).to.equal(0);
    await loadHistory(store, cache, "c", await checkpoint(system, user("one")));
    await loadHistory(store, cache, "c", empty);
    expect(cache.conversations).to.equal(0);
  });

  it("refuses a checkpoint that does not start with the system prompt, whatever is cached", async () => {
    const cache = new HistoryCache();
    await loadHistory(store, cache, "c", await checkpoint(system, user("one")));
    const err = await loadHistory(store, cache, "c", await checkpoint(user("one"))).catch((e: unknown) => e);
    expect(String(err)).to.match(/exactly one system prompt root/);
  });
});
