// Worker kind → factory: the one place a new worker family is added (the AEP envelope check and the config read
// their kinds from WORKER_KINDS in types.ts).
import { type AcpFactoryOptions, createAcpWorkerFactory } from "./acp/factory.js";
import { type ClaudeCodeFactoryOptions, createClaudeCodeWorkerFactory } from "./claude-code/factory.js";
import { DEFAULT_WORKER, WORKER_KINDS, type WorkerFactory, type WorkerKind } from "./types.js";

/** Each kind's options as the config's `workers:` section gives them. */
export interface WorkerOptions {
  "claude-code"?: ClaudeCodeFactoryOptions;
  codex?: AcpFactoryOptions;
  acp?: AcpFactoryOptions;
}

const factories = new Map<WorkerKind, (options: WorkerOptions) => WorkerFactory>([
  ["claude-code", (options) => createClaudeCodeWorkerFactory(options["claude-code"])],
  ["codex", (options) => createAcpWorkerFactory("codex", options.codex)],
  ["acp", (options) => createAcpWorkerFactory("acp", options.acp)],
]);

export function workerFactoryFor(kind: WorkerKind, options: WorkerOptions = {}): WorkerFactory {
  const make = factories.get(kind);
  if (!make) throw new Error(`no factory for worker kind ${kind}`);
  return make(options);
}

/**
 * The gateway's factory: each start goes to its session's kind (`WorkerStartOptions.worker`), each kind's factory
 * made on first use (each keeps its own generations). A stored kind this gateway does not know fails that start.
 */
export function workerFactories(options: WorkerOptions = {}): WorkerFactory {
  const made = new Map<WorkerKind, WorkerFactory>();
  return {
    start(start, listener) {
      const kind = WORKER_KINDS.find((k) => k === (start.worker ?? DEFAULT_WORKER));
      if (!kind) throw new Error(`unknown worker kind ${JSON.stringify(start.worker)}`);
      let factory = made.get(kind);
      if (!factory) {
        factory = workerFactoryFor(kind, options);
        made.set(kind, factory);
      }
      return factory.start(start, listener);
    },
  };
}
