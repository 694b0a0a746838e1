// A rig for driver tests with the real Claude Code CLI: the fake Anthropic API, a fresh HOME, workdir and TMPDIR
// per test, the driver's factory pointed at them, and a recorder that waits for events with promise gates.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClaudeCodeWorkerFactory } from "../../workers/claude-code/factory.js";
import type { Worker, WorkerEvent, WorkerFactory, WorkerStartOptions } from "../../workers/types.js";
import { type FakeAnthropic, startFakeAnthropic } from "../support/fake-anthropic.js";

export interface Recorded {
  event: WorkerEvent;
  generation: number;
}

/** Collects one worker's events; `next` resolves at the first matching event from `from` on (a promise gate). */
export class EventLog {
  readonly all: Recorded[] = [];
  private waiters: Array<{ from: number; match: (e: WorkerEvent) => boolean; resolve: (r: Recorded) => void }> = [];

  push(event: WorkerEvent, generation: number): void {
    this.all.push({ event, generation });
    const index = this.all.length - 1;
    this.waiters = this.waiters.filter((w) => {
      if (index < w.from || !w.match(event)) return true;
      w.resolve(this.all[index]!);
      return false;
    });
  }

  /** Position after the last event so far: pass it to `next` to wait for something that has not happened yet. */
  mark(): number {
    return this.all.length;
  }

  next<T extends WorkerEvent["type"]>(
    type: T,
    from = 0,
    where: (e: Extract<WorkerEvent, { type: T }>) => boolean = () => true,
  ): Promise<Extract<WorkerEvent, { type: T }>> {
    const match = (e: WorkerEvent): boolean => e.type === type && where(e as Extract<WorkerEvent, { type: T }>);
    const found = this.all.slice(from).find((r) => match(r.event));
    if (found) return Promise.resolve(found.event as Extract<WorkerEvent, { type: T }>);
    return new Promise((resolve) =>
      this.waiters.push({ from, match, resolve: (r) => resolve(r.event as Extract<WorkerEvent, { type: T }>) }),
    );
  }

  events(from = 0, to = this.all.length): WorkerEvent[] {
    return this.all.slice(from, to).map((r) => r.event);
  }
}

export interface CliRig {
  fake: FakeAnthropic;
  home: string;
  workdir: string;
  factory: WorkerFactory;
  start(options: Partial<WorkerStartOptions> & { workerSessionId: string }): { worker: Worker; log: EventLog };
  dispose(): Promise<void>;
}

export async function startCliRig(): Promise<CliRig> {
  const fake = await startFakeAnthropic();
  const root = await mkdtemp(join(tmpdir(), "byok-cc-"));
  const [home, workdir, tmp] = await Promise.all([
    mkdtemp(join(root, "home-")),
    mkdtemp(join(root, "work-")),
    mkdtemp(join(root, "tmp-")),
  ]);
  const factory = createClaudeCodeWorkerFactory({
    env: { ANTHROPIC_BASE_URL: fake.baseUrl, ANTHROPIC_API_KEY: "sk-test", CLAUDE_CODE_MAX_RETRIES: "1", TMPDIR: tmp },
    interruptAckMs: 10_000,
  });
  const workers: Worker[] = [];
  return {
    fake,
    home,
    workdir,
    factory,
    start(options) {
      const log = new EventLog();
      const worker = factory.start({ workdir, home, resume: false, ...options }, (event, generation) =>
        log.push(event, generation),
      );
      workers.push(worker);
      return { worker, log };
    },
    async dispose() {
      for (const worker of workers) worker.kill();
      await Promise.all(workers.map((w) => w.close()));
      await fake.close();
      await rm(root, { recursive: true, force: true });
    },
  };
}
