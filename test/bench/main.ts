// `npm run bench [-- --quick] [-- --write docs/performance.md] [-- --only a,b] [-- --profile DIR]`: the real
// gateway and the raw-relay baseline side by side, in one run, on loopback (issue 6). Prints one JSON line per
// figure on stdout, then a human summary; progress goes to stderr.
import { parseArgs } from "node:util";
import { createWorkspace } from "../support/client-workspace.js";
import { type BenchContext, type Figure, summaryLines } from "./figures.js";
import { startFakes, startGateway, startRawRelay } from "./processes.js";
import { machineFacts, writeReport } from "./report.js";
import { concurrencyScenario } from "./scenarios/concurrency.js";
import { conversationScenario } from "./scenarios/conversation.js";
import { fastStreamsScenario } from "./scenarios/fast-streams.js";
import { fsyncScenario } from "./scenarios/fsync.js";
import { promptCacheScenario } from "./scenarios/prompt-cache.js";
import { relayScenario } from "./scenarios/relay.js";
import { startupScenario } from "./scenarios/startup.js";
import { streamingScenario } from "./scenarios/streaming.js";

const scenarios = {
  streaming: streamingScenario,
  concurrency: concurrencyScenario,
  "fast-streams": fastStreamsScenario,
  conversation: conversationScenario,
  fsync: fsyncScenario,
  relay: relayScenario,
  startup: startupScenario,
  "prompt-cache": promptCacheScenario,
} as const;
type ScenarioName = keyof typeof scenarios;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: "boolean" },
      write: { type: "string" },
      only: { type: "string" },
      profile: { type: "string" },
    },
  });
  const quick = values.quick ?? false;
  const names = (values.only?.split(",") ?? Object.keys(scenarios)) as ScenarioName[];
  const unknown = names.filter((n) => !(n in scenarios));
  if (unknown.length)
    throw new Error(`unknown scenario ${unknown.join(", ")}; known: ${Object.keys(scenarios).join(", ")}`);
  const log = (line: string) => process.stderr.write(`bench: ${line}\n`);
  const before = machineFacts();
  const started = Date.now();

  const fakes = await startFakes();
  const gateway = await startGateway({
    upstream: fakes.upstreamUrl,
    ...(values.profile ? { cpuProfDir: values.profile } : {}),
  });
  const raw = await startRawRelay();
  const ctx: BenchContext = {
    quick,
    gateway,
    raw,
    fakes,
    workspace: createWorkspace({ "src/notes.txt": "notes\n".repeat(40) }),
    log,
  };
  const figures: Figure[] = [];
  try {
    for (const name of names) {
      log(`${name}…`);
      const t0 = Date.now();
      figures.push(...(await scenarios[name](ctx)));
      log(`${name} done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    }
  } finally {
    await Promise.all([gateway.stop(), raw.stop()]);
    await fakes.stop();
  }
  const seconds = (Date.now() - started) / 1000;
  process.stdout.write(
    `\nsummary (${quick ? "quick" : "full"} run, ${seconds.toFixed(0)} s):\n${summaryLines(figures, quick).join("\n")}\n`,
  );
  if (values.write) {
    await writeReport(values.write, figures, { quick, seconds, before, after: machineFacts() });
    log(`wrote ${values.write}`);
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
