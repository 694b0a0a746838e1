import { expect } from "chai";
import { BlobIntegrityError } from "../../store/index.js";
import { BlobKinds, blobId } from "../../cursor/blob-graph.js";
import { type TempStore, blobOf, tempStore, utf8 } from "./temp-store.js";

describe("store: blobs", () => {
  let t: TempStore;
  beforeEach(async () => {
    t = await tempStore();
  });
  afterEach(() => t.cleanup());

  it("blobId is the SHA-256 of the bytes, as a plain 32-byte Uint8Array", () => {
    const id = blobId(utf8("abc"));
    expect(id.constructor).to.equal(Uint8Array);
    expect(Buffer.from(id).toString("hex")).to.equal(
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
    );
  });

  it("stores blobs and reads back the same bytes", async () => {
    const a = blobOf("system prompt", BlobKinds.RootPromptJson);
    const b = blobOf("no kind known");
    await t.store.putBlobs([a, b]);
    expect(await t.store.getBlob(a.id)).to.deep.equal(a.data);
    expect(await t.store.getBlob(b.id)).to.deep.equal(b.data);
    expect(await t.store.getBlob(blobId(utf8("never stored")))).to.equal(undefined);
  });

  it("getBlobs reads many blobs at once, in the order asked, undefined where absent", async () => {
    const many = Array.from({ length: 230 }, (_, i) => blobOf(`blob ${i}`));
    await t.store.putBlobs(many);
    const absent = blobId(utf8("never stored"));
    const ids = [many[229]!.id, absent, ...many.map((b) => b.id)];
    const got = await t.store.getBlobs(ids);
    expect(got[0]).to.deep.equal(many[229]!.data);
    expect(got[1]).to.equal(undefined);
    expect(got.slice(2)).to.deep.equal(many.map((b) => b.data));
  });

  it("rejects a batch with one mismatched hash and writes none of it", async () => {
    const good = blobOf("good");
    const bad = { id: blobId(utf8("claimed")), data: utf8("actual") };
    const err = await t.store.putBlobs([good, bad]).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(BlobIntegrityError);
    expect((err as BlobIntegrityError).expectedId).to.equal(Buffer.from(bad.id).toString("hex"));
    expect(await t.store.missingBlobs([good.id, bad.id])).to.deep.equal([good.id, bad.id]);
  });

  it("rejects an id that is not 32 bytes", async () => {
    const data = utf8("x");
    const err = await t.store.putBlobs([{ id: blobId(data).subarray(0, 31), data }]).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(BlobIntegrityError);
  });

  it("putting the same blob again is an idempotent success", async () => {
    const a = blobOf("same bytes");
    await t.store.putBlobs([a]);
    await t.store.putBlobs([a, a]);
    const db = await t.inspect();
    expect(await db("blobs").count({ n: "*" })).to.deep.equal([{ n: 1 }]);
    expect(await t.store.getBlob(a.id)).to.deep.equal(a.data);
  });

  it("stores a batch larger than one multi-row insert", async () => {
    const many = Array.from({ length: 250 }, (_, i) => blobOf(`blob ${i}`));
    await t.store.putBlobs(many);
    expect(await t.store.missingBlobs(many.map((b) => b.id))).to.deep.equal([]);
  });

  it("missingBlobs lists exactly the absent ids, in the order asked", async () => {
    const [a, b, c, d] = ["a", "b", "c", "d"].map((s) => blobOf(s));
    await t.store.putBlobs([b, d]);
    expect(await t.store.missingBlobs([a.id, b.id, c.id, d.id])).to.deep.equal([a.id, c.id]);
    expect(await t.store.missingBlobs([])).to.deep.equal([]);
  });
});
