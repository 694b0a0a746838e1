// Process diagnostics for the benchmark (docs/performance.md): event-loop delay, CPU time and memory, served at
// GET /__byok/diagnostics only when the gateway runs with BYOK_DIAGNOSTICS=1. Off by default because the delay
// histogram samples on a timer for as long as it is enabled.
import { monitorEventLoopDelay, type IntervalHistogram } from "node:perf_hooks";

export const DIAGNOSTICS_ENV = "BYOK_DIAGNOSTICS";

export interface DiagnosticsSnapshot {
  pid: number;
  /** process.cpuUsage(): all threads, including the libuv pool that runs SQLite. */
  cpuUserUs: number;
  cpuSystemUs: number;
  rssBytes: number;
  heapUsedBytes: number;
  /** Durable commits the store made since start (COMMITs and autocommitted writes): with synchronous = FULL in WAL
   * mode each is one WAL fsync. */
  storeCommits: number;
  /** Request streams in memory, and those of them still waiting for their run_request. */
  requestStreams: { streams: number; waiting: number };
  /** Event-loop delay since the last reset, in milliseconds. */
  eventLoopDelay: { p50: number; p99: number; max: number; mean: number; samples: number };
}

export interface Diagnostics {
  /** The snapshot; `reset` restarts the delay histogram afterwards so the next reading covers a new window. */
  read(reset: boolean): DiagnosticsSnapshot;
  /** The store's onQuery hook: counts its commits (the fsync figure where strace is not available). */
  countStatement(sql: string, inTransaction: boolean): void;
}

/** Resolution of the delay sampler: fine enough to see a few milliseconds of blocking, cheap enough for 2 cores. */
const SAMPLE_EVERY_MS = 5;

export interface DiagnosticsSources {
  streams: () => DiagnosticsSnapshot["requestStreams"];
}

export function createDiagnostics(sources: DiagnosticsSources): Diagnostics {
  const delay = monitorEventLoopDelay({ resolution: SAMPLE_EVERY_MS });
  delay.enable();
  let storeCommits = 0;
  return {
    countStatement(sql, inTransaction) {
      if (/^commit/i.test(sql) || (!inTransaction && /^(insert|update|delete|replace)\b/i.test(sql))) storeCommits++;
    },
    read(reset) {
      const cpu = process.cpuUsage();
      const memory = process.memoryUsage();
      const snapshot = {
        pid: process.pid,
        cpuUserUs: cpu.user,
        cpuSystemUs: cpu.system,
        rssBytes: memory.rss,
        heapUsedBytes: memory.heapUsed,
        storeCommits,
        requestStreams: sources.streams(),
        eventLoopDelay: delayMs(delay),
      };
      if (reset) delay.reset();
      return snapshot;
    },
  };
}

function delayMs(h: IntervalHistogram): DiagnosticsSnapshot["eventLoopDelay"] {
  const ms = (ns: number) => (Number.isFinite(ns) ? ns / 1e6 : 0);
  return { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max), mean: ms(h.mean), samples: h.count };
}
