// The `byok` CLI: argument parsing and wiring only. Subcommand modules are imported lazily so `--help` and
// `diagrams` do not load the gateway (native sqlite) and `serve` does not load the diagram renderer.
import { lookup } from "node:dns/promises";
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join } from "node:path";
import { parseArgs } from "node:util";
import { ConfigError, loadConfig } from "../engine/config.js";
import { createJsonLogger } from "../log/logger.js";

const usage = `Usage: byok <command> [options]

Commands:
  serve        start the gateway
  diagrams     render the lifecycle diagrams into docs/lifecycle/
  help         show this help

Options for serve:
  --host HOST      listen address (default 127.0.0.1)
  --port N         listen port, 0 picks a free one (default 8787)
  --data-dir DIR   store directory (default $XDG_DATA_HOME/byok-gateway or ~/.local/share/byok-gateway)
  --config FILE    model config, YAML or JSON
  --upstream URL   Cursor backend that receives relayed requests (default https://api2.cursor.sh)
  --aep-port N     open the AEP v1 WebSocket endpoint (/ws) on this port, 0 picks a free one (overrides aep.port)

  -h, --help       show this help
  -v, --version    print the version

Exit status: 0 after a clean stop, 2 when the command line, the config or a start-up condition it names is
wrong (the message says which), 1 on an unexpected failure.
`;

const options = {
  host: { type: "string", expects: "a host name or address" },
  port: { type: "string", expects: "a port number 0-65535" },
  "data-dir": { type: "string", expects: "a directory" },
  config: { type: "string", expects: "a config file" },
  upstream: { type: "string", expects: "an http(s) URL" },
  "aep-port": { type: "string", expects: "a port number 0-65535" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
} as const;

/** Signals closer together than this are one request to stop. */
const REPEATED_SIGNAL_MS = 1000;

type OptionName = keyof typeof options;
type Values = { [name in OptionName]?: (typeof options)[name]["type"] extends "string" ? string : boolean };

const serveOnly = ["host", "port", "data-dir", "config", "upstream", "aep-port"] as const;

class UsageError extends Error {}

async function main(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(argv);
  if (values.help) {
    process.stdout.write(usage);
    return;
  }
  if (values.version) {
    process.stdout.write(`${packageVersion()}\n`);
    return;
  }
  if (positionals.length !== 1)
    throw new UsageError(positionals.length === 0 ? "missing command" : "too many arguments");
  const [command] = positionals;
  if (command === "help") {
    process.stdout.write(usage);
    return;
  }
  if (command === "serve") return serve(values);
  if (command === "diagrams") {
    const misplaced = serveOnly.find((name) => values[name] !== undefined);
    if (misplaced) throw new UsageError(`--${misplaced} is an option of serve`);
    const { writeDiagrams } = await import("../docs/lifecycle/generate.js");
    return writeDiagrams();
  }
  throw new UsageError(`unknown command ${JSON.stringify(command)}`);
}

/**
 * parseArgs splits the command line; its strict mode is not used because it refuses `--port -1` as "ambiguous"
 * and words its errors for programmers. Each option token is checked here instead, so every error names the flag
 * and what it expects, and a value that starts with "-" reaches the value's own check.
 */
function parseCommandLine(argv: string[]): { values: Values; positionals: string[] } {
  const { values, positionals, tokens } = parseArgs({
    args: argv,
    options,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  for (const token of tokens) if (token.kind === "option") checkOption(token.name, token.rawName, token.value);
  return { values: values as Values, positionals };
}

function checkOption(name: string, rawName: string, value: string | undefined): void {
  if (!Object.hasOwn(options, name)) throw new UsageError(`unknown option ${rawName}`);
  const option = options[name as OptionName];
  if (option.type === "boolean" && value !== undefined) throw new UsageError(`${rawName} takes no value`);
  if (option.type === "string" && (value === undefined || value === "" || value.startsWith("--")))
    throw new UsageError(`${rawName} expects ${option.expects}`);
}

async function serve(values: Values): Promise<void> {
  const port = parsePort(values.port ?? "8787");
  const aepPort = values["aep-port"] === undefined ? undefined : parsePort(values["aep-port"], "--aep-port");
  const upstream = parseUpstream(values.upstream ?? "https://api2.cursor.sh");
  const dataDir = values["data-dir"] ?? defaultDataDir();
  const config = loadConfig(values.config);
  const host = await checkHost(values.host ?? "127.0.0.1");
  const log = createJsonLogger();

  const { startGateway } = await import("../engine/gateway.js");
  const gateway = await startGateway({
    host,
    port,
    dataDir,
    config,
    ...(values.config === undefined ? {} : { configFile: values.config }),
    upstream,
    log,
    ...(aepPort === undefined ? {} : { aepPort }),
  });
  // The AEP line comes first: whoever waits for the listening line may read the AEP one already.
  if (gateway.aepUrl) process.stdout.write(`byok-gateway AEP v1 listening on ${gateway.aepUrl}\n`);
  process.stdout.write(`byok-gateway listening on ${gateway.url}\n`);
  // Where the generated gateway token is (never the token itself), as Jupyter points at its own.
  if (gateway.tokenFile)
    process.stdout.write(
      `byok-gateway token in ${gateway.tokenFile} (clients send it as "Authorization: Bearer <token>")\n`,
    );

  let stoppingSince: number | undefined;
  const stop = (signal: NodeJS.Signals) => {
    // A second signal while closing means the user wants out now, unless it is the first one delivered twice: a
    // terminal's Ctrl-C reaches the whole process group, and `npm start` forwards its own copy as well.
    if (stoppingSince !== undefined) {
      if (Date.now() - stoppingSince > REPEATED_SIGNAL_MS) process.exit(1);
      return;
    }
    stoppingSince = Date.now();
    log.info("shutting down", { signal });
    gateway.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error("shutdown failed", { error: err });
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

function parsePort(text: string, flag = "--port"): number {
  const port = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(port >= 0 && port <= 65535))
    throw new UsageError(`${flag} expects a port number 0-65535, got ${JSON.stringify(text)}`);
  return port;
}

/** A name that does not resolve would otherwise fail deep inside listen() as a bare getaddrinfo error. */
async function checkHost(host: string): Promise<string> {
  try {
    await lookup(host);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "lookup failed";
    throw new UsageError(`--host ${JSON.stringify(host)} does not resolve to an address (${code})`);
  }
  return host;
}

function parseUpstream(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--upstream expects an http(s) URL, got ${JSON.stringify(text)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new UsageError(`--upstream expects an http(s) URL, got ${JSON.stringify(text)}`);
  return text;
}

// XDG Base Directory spec: a relative XDG_DATA_HOME is invalid and must be ignored.
function defaultDataDir(): string {
  const xdg = process.env.XDG_DATA_HOME;
  const base = xdg !== undefined && isAbsolute(xdg) ? xdg : join(homedir(), ".local", "share");
  return join(base, "byok-gateway");
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

main(process.argv.slice(2)).catch((err: unknown) => {
  // process.exit rather than exitCode: a gateway that failed halfway may hold handles open.
  if (err instanceof UsageError) {
    process.stderr.write(`byok: ${err.message}\n\n${usage}`);
    process.exit(2);
  }
  if (err instanceof ConfigError) {
    process.stderr.write(`byok: ${err.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`byok: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
