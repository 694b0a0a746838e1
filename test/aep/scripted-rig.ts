// The session-core rig: a real AEP listener on a temp store, sessions run on the scripted worker. Registers its
// hooks in the calling describe; tests may replace `listener` (a restart) and the rig closes whichever is current.
import { expect } from "chai";
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startAepListener, type AepListener, type AepListenerOptions } from "../../aep/listener.js";
import type { Logger } from "../../log/logger.js";
import { tempStore, type TempStore } from "../store/temp-store.js";
import { openSession, type AepClient } from "./aep-client.js";
import type { OrderingChecker } from "./invariants.js";
import { ScriptedFactory } from "./scripted-worker.js";

/** The listener's token: every client of the rig presents it. */
export const RIG_TOKEN = "scripted-rig-token";

export interface ScriptedRig {
  temp: TempStore;
  factory: ScriptedFactory;
  listener: AepListener;
  /** aep.workdir: the root the rig's workdirs lie in. */
  root: string;
  workdir: string;
  /** Failures and invariant violations the listener logged; the rig asserts none after each test. */
  errors: string[];
  log: Logger;
  /** A listener on the rig's store (a restart, or other limits), the scripted factory unless given. */
  listen(options?: Partial<AepListenerOptions>): Promise<AepListener>;
  open(data?: Record<string, unknown>, checker?: OrderingChecker): ReturnType<typeof openSession>;
}

export function useScriptedRig(): ScriptedRig {
  const errors: string[] = [];
  const log: Logger = {
    info: () => {},
    warn: () => {},
    error: (msg, fields) => void errors.push(`${msg} ${JSON.stringify(fields)}`),
  };
  const rig = {
    errors,
    log,
    listen: (options: Partial<AepListenerOptions> = {}) =>
      startAepListener({
        port: 0,
        host: "127.0.0.1",
        store: rig.temp.store.aep,
        factory: rig.factory,
        log: rig.log,
        token: RIG_TOKEN,
        workdirs: { base: rig.root, dataDir: rig.temp.dataDir },
        ...options,
      }),
    open: (data: Record<string, unknown> = {}, checker?: OrderingChecker) =>
      openSession(rig.listener.url, { token: RIG_TOKEN, workdir: rig.workdir, ...data }, checker),
  } as unknown as ScriptedRig; // the per-test fields are set by beforeEach
  beforeEach(async () => {
    errors.length = 0;
    rig.temp = await tempStore();
    rig.factory = new ScriptedFactory();
    rig.root = await mkdtemp(join(tmpdir(), "aep-work-"));
    rig.workdir = await realpath(await mkdtemp(join(rig.root, "w-")));
    rig.listener = await rig.listen();
  });
  afterEach(async () => {
    await rig.listener.close();
    await rig.temp.cleanup();
    await rm(rig.root, { recursive: true, force: true });
    expect(errors, "no invariant violations or failures logged").to.deep.equal([]);
  });
  return rig;
}

/** Sends an input and waits until its delivery is acknowledged; returns the mark before it. */
export async function runPlainTurn(client: AepClient, id: string, content: string) {
  const from = client.mark();
  client.send("input", { content }, id);
  await client.next(
    (e) => e.event.type === "input.ack" && (e.event.data as { status: string }).status === "delivered",
    from,
  );
  return from;
}
