// One fake OpenAI and one data directory per describe block, and a gateway on that store that a test may start again
// after killing it: the set-up of the e2e files that restart the gateway on the same store.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";

export interface StoreGateway {
  readonly fake: FakeOpenAI;
  readonly dataDir: string;
  /** A gateway on the block's store serving `model` through the fake; nothing is relayed anywhere. */
  start(): Promise<GatewayProcess>;
}

export function useStoreGateway(label: string, model: { id: string; apiKey: string }): StoreGateway {
  let fake: FakeOpenAI | undefined;
  let dataDir: string | undefined;
  before(async () => {
    fake = await startFakeOpenAI();
    dataDir = await mkdtemp(join(tmpdir(), `byok-e2e-${label}-`));
  });
  after(async () => {
    await killAllGateways();
    await fake?.close();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("useStoreGateway: used outside its describe block's tests");
    return value;
  };
  return {
    get fake() {
      return ready(fake);
    },
    get dataDir() {
      return ready(dataDir);
    },
    start() {
      const { baseUrl } = ready(fake);
      const models = [{ id: model.id, provider: "openai-chat", baseUrl, apiKey: model.apiKey, model: "m" }];
      return startGatewayProcess({ dataDir: ready(dataDir), config: { models }, upstream: "http://127.0.0.1:9" });
    },
  };
}
