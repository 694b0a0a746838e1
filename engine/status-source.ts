// What the status page shows, gathered from the parts that know it (docs/status-api.md): the live-run registry, the
// store's conversations and usage, the AEP listener's sessions and the resolved configuration (masked by the API).
import type { Store } from "../store/index.js";
import type { AepSessionRow, StatusSource } from "../status/types.js";
import type { GatewayConfig } from "./config.js";
import type { LiveRunRegistry } from "./live-runs.js";
import type { UsageLedger } from "./usage-meter.js";

export interface StatusFacts {
  runs: LiveRunRegistry;
  store: Store;
  usage: UsageLedger;
  /** The AEP listener's sessions, once it is on. */
  aepSessions: () => AepSessionRow[] | undefined;
  config: GatewayConfig;
  /** Where the gateway listens and what it relays to, shown beside the config file's settings. */
  settings: { host: string; dataDir: string; upstream: string; configFile?: string };
  version: string;
}

export function statusSource(f: StatusFacts): StatusSource {
  return {
    liveRuns: () => f.runs.liveRuns(),
    recentRuns: () => f.runs.recentRuns(),
    subscribe: (listener) => f.runs.subscribe(listener),
    conversations: (page) => f.store.listConversations(page),
    usage: async (sinceDay, limit) => {
      await f.usage.flush(); // what the ledger still holds counts too
      return f.store.usageSince(sinceDay, limit);
    },
    aepSessions: f.aepSessions,
    config: () => ({ gateway: f.settings, ...f.config }),
    version: f.version,
  };
}
