import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Knex } from "knex";
import { openDb } from "../../store/db.js";
import { DB_FILENAME, type Store, type StoreOptions, openStore } from "../../store/index.js";
import { type BlobPut, blobId } from "../../cursor/blob-graph.js";

/** A fresh data dir per test; `inspect` is a second connection for asserting rows the Store API does not expose. */
export interface TempStore {
  store: Store;
  dataDir: string;
  filename: string;
  reopen(opts?: StoreOptions): Promise<Store>;
  inspect(): Promise<Knex>;
  cleanup(): Promise<void>;
}

export async function tempStore(opts: StoreOptions = {}): Promise<TempStore> {
  const dataDir = await mkdtemp(join(tmpdir(), "byok-store-"));
  const opened: Array<{ close(): Promise<void> }> = [];
  const open = async (o: StoreOptions = {}) => {
    const s = await openStore({ dataDir, ...o });
    opened.push(s);
    return s;
  };
  const store = await open(opts);
  const filename = join(dataDir, DB_FILENAME);
  return {
    store,
    dataDir,
    filename,
    reopen: open,
    inspect: async () => {
      const db = await openDb(filename);
      opened.push({ close: () => db.destroy() });
      return db;
    },
    cleanup: async () => {
      for (const s of opened) await s.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

export function blobOf(text: string, kind?: number): BlobPut {
  const data = utf8(text);
  return { id: blobId(data), data, ...(kind === undefined ? {} : { kind }) };
}
