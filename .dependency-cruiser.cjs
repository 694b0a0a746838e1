// Which folder may import which (docs: README "Layout"). Run by `npm test` through test/architecture/.
const SOURCE =
  "^(bin|engine|machines|cursor|transport|aep|workers|store|providers|prompt|log|messages-api|doctor|status)/";
const forbid = (name, comment, from, to) => ({
  name,
  comment,
  severity: "error",
  from: { path: from },
  to: { path: to },
});

module.exports = {
  forbidden: [
    { name: "no-circular", severity: "error", from: { path: SOURCE }, to: { circular: true } },
    forbid(
      "machines-pure",
      "machines hold state only: no I/O, no wiring",
      "^machines/",
      "^(transport|store|engine|bin)/|^aep/(?!wire/)|^workers/(?!types\\.ts$)",
    ),
    forbid(
      "transport-framing-only",
      "transport frames and routes; the engine implements AgentBackend",
      "^transport/",
      "^(machines|engine|store|aep|workers|bin|status)/",
    ),
    forbid(
      "cursor-pure",
      "the Cursor message mapping is pure",
      "^cursor/",
      "^(transport|store|engine|machines|aep|workers|bin)/",
    ),
    forbid(
      "aep-wire-pure",
      "the AEP wire knows no sessions, stores or processes",
      "^aep/wire/",
      "^(transport|store|engine|machines|bin|cursor)/|^aep/(?!wire/)|^workers/(?!types\\.ts$)",
    ),
    forbid(
      "store-below",
      "the store knows rows, not lifecycles or wires",
      "^store/",
      "^(transport|engine|machines|aep|workers|providers|prompt|bin)/|^cursor/(?!blob-graph\\.ts$)",
    ),
    forbid(
      "providers-below",
      "providers speak HTTP to model APIs only",
      "^providers/",
      "^(transport|engine|machines|aep|workers|store|cursor|prompt|bin)/",
    ),
    forbid(
      "workers-below",
      "workers drive processes; AEP maps their events",
      "^workers/",
      "^(transport|engine|aep|store|cursor|bin)/",
    ),
    forbid(
      "messages-api-below",
      "the Anthropic Messages front door speaks HTTP and the provider vocabulary only; the engine mounts it",
      "^messages-api/",
      "^(transport|engine|machines|aep|workers|store|cursor|prompt|bin)/",
    ),
    forbid(
      "status-serves-only",
      "the status page serves what the engine hands it (a StatusSource); it reads no store, machine or session itself",
      "^status/",
      "^(engine|machines|store|aep|workers|providers|cursor|prompt|messages-api|bin)/|^transport/(?!gate\\.ts$)",
    ),
    forbid(
      "log-bottom",
      "the logger imports nothing of ours outside log/",
      "^log/",
      "^(bin|engine|machines|cursor|transport|aep|workers|store|providers|prompt|messages-api|doctor|status)/",
    ),
    forbid(
      "nothing-imports-bin",
      "bin is the entry",
      "^(engine|machines|cursor|transport|aep|workers|store|providers|prompt|log|messages-api|status)/",
      "^bin/",
    ),
    forbid(
      "doctor-for-bin",
      "byok doctor checks a setup from outside; only the CLI runs it",
      "^(engine|machines|cursor|transport|aep|workers|store|providers|prompt|log|messages-api)/",
      "^doctor/",
    ),
    forbid("no-tests-in-source", "source never imports tests", SOURCE, "^test/"),
  ],
  options: {
    parser: "swc",
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|proto/gen)/" },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: [".ts", ".js"] },
  },
};
