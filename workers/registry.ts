// Worker kind → factory: the one place a new worker family is added (the AEP envelope check and the config read
// their kinds from WORKER_KINDS in types.ts).
import { type ClaudeCodeFactoryOptions, createClaudeCodeWorkerFactory } from "./claude-code/factory.js";
import type { WorkerFactory, WorkerKind } from "./types.js";

/** Each kind's options as the config's `workers:` section gives them. */
export interface WorkerOptions {
  "claude-code"?: ClaudeCodeFactoryOptions;
}

const factories = new Map<WorkerKind, (options: WorkerOptions) => WorkerFactory>([
  ["claude-code", (options) => createClaudeCodeWorkerFactory(options["claude-code"])],
]);

export function workerFactoryFor(kind: WorkerKind, options: WorkerOptions = {}): WorkerFactory {
  const make = factories.get(kind);
  if (!make) throw new Error(`no factory for worker kind ${kind}`);
  return make(options);
}
