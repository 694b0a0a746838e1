// The `byok` CLI: argument parsing and wiring only. Subcommand modules are imported lazily so `--help` and
// `diagrams` do not load the gateway (native sqlite) and `serve` does not load the diagram renderer.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { ConfigError, loadConfig, type TlsConfig } from "../engine/config.js";
import { flushHeldLines } from "../log/line-writer.js";
import {
  checkHost,
  configFileFrom,
  DEFAULT_PORT,
  DEFAULT_UPSTREAM,
  defaultConfigFile,
  defaultDataDir,
  parseLogFormat,
  parseLogLevel,
  parsePort,
  parseUpstream,
  UsageError,
} from "./options.js";

const usage = `Usage: byok <command> [options]

Commands:
  serve        start the gateway
  doctor       check the setup (config, keys and endpoints, data dir, ports, upstream, AEP worker) and say how
               to point Cursor at the gateway; exit status 0 only when every check passes
  init         write the example config to ${defaultConfigFile()} (or --config FILE); never overwrites
  diagrams     render the lifecycle diagrams into docs/lifecycle/
  help         show this help

Options for serve and doctor:
  --host HOST      listen address (default 127.0.0.1)
  --port N         listen port, 0 picks a free one (default 8787)
  --data-dir DIR   store directory (default $XDG_DATA_HOME/byok-gateway or ~/.local/share/byok-gateway)
  --config FILE    config, YAML or JSON (default ${defaultConfigFile()} when it exists)
  --upstream URL   Cursor backend that receives relayed requests (default https://api2.cursor.sh)
  --aep-port N     open the AEP v1 WebSocket endpoint (/ws) on this port, 0 picks a free one (overrides aep.port)
  --tls-cert FILE  serve HTTPS (HTTP/2 and HTTP/1.1) with this PEM certificate; needs --tls-key (overrides tls.cert)
  --tls-key FILE   the PEM private key of --tls-cert (overrides tls.key)

Options for serve:
  --log-level L    trace, debug, info, warn, error, fatal or silent (default $BYOK_LOG_LEVEL, else info)
  --log-format F   pretty or json (default pretty when stderr is a terminal, else json)

Options for doctor:
  --offline        skip the checks that reach the network (model endpoints, upstream)

  -h, --help       show this help
  -v, --version    print the version

Exit status: 0 after a clean stop, 2 when the command line, the config or a start-up condition it names is
wrong (the message says which), 1 on an unexpected failure or, for doctor, a failed check.
`;

const options = {
  host: { type: "string", expects: "a host name or address" },
  port: { type: "string", expects: "a port number 0-65535" },
  "data-dir": { type: "string", expects: "a directory" },
  config: { type: "string", expects: "a config file" },
  upstream: { type: "string", expects: "an http(s) URL" },
  "aep-port": { type: "string", expects: "a port number 0-65535" },
  "log-level": { type: "string", expects: "a log level" },
  "log-format": { type: "string", expects: "pretty or json" },
  offline: { type: "boolean" },
  "tls-cert": { type: "string", expects: "a PEM certificate file" },
  "tls-key": { type: "string", expects: "a PEM private key file" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "v" },
} as const;

type OptionName = keyof typeof options;
type Values = { [name in OptionName]?: (typeof options)[name]["type"] extends "string" ? string : boolean };

const setupOptions = ["host", "port", "data-dir", "config", "upstream", "aep-port", "tls-cert", "tls-key"] as const;
/** The options each command takes besides --help and --version. */
const commandOptions = new Map<string, readonly OptionName[]>([
  ["serve", [...setupOptions, "log-level", "log-format"]],
  ["doctor", [...setupOptions, "offline"]],
  ["init", ["config"]],
  ["diagrams", []],
  ["help", []],
]);

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
  const command = positionals[0]!;
  const allowed = commandOptions.get(command);
  if (!allowed) throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  checkOptionsOf(command, allowed, values);
  switch (command) {
    case "help":
      process.stdout.write(usage);
      return;
    case "init": {
      const { init } = await import("./init.js");
      process.stdout.write(init(values.config ?? defaultConfigFile()));
      return;
    }
    case "diagrams": {
      const { writeDiagrams } = await import("../docs/lifecycle/generate.js");
      return writeDiagrams();
    }
    case "doctor": {
      const { runDoctor } = await import("../doctor/run.js");
      const tls = tlsFiles(values, undefined);
      const ok = await runDoctor({ ...(await setup(values)), tls, offline: values.offline ?? false });
      if (!ok) process.exitCode = 1;
      return;
    }
    default: {
      const logLevel = parseLogLevel(values["log-level"]);
      const logFormat = parseLogFormat(values["log-format"]);
      const { serve } = await import("./serve.js");
      const checked = await setup(values);
      const config = loadConfig(checked.configFile);
      return serve({ ...checked, config, tls: tlsFiles(values, config.tls), logLevel, logFormat });
    }
  }
}

/** The values serve and doctor share, checked; the config is loaded by each (doctor reports its errors). */
async function setup(values: Values) {
  const port = parsePort(values.port ?? DEFAULT_PORT);
  const aepPort = values["aep-port"] === undefined ? undefined : parsePort(values["aep-port"], "--aep-port");
  const upstream = parseUpstream(values.upstream ?? DEFAULT_UPSTREAM);
  const dataDir = values["data-dir"] ?? defaultDataDir();
  const configFile = configFileFrom(values.config);
  const host = await checkHost(values.host ?? "127.0.0.1");
  return { host, port, aepPort, upstream, dataDir, configFile };
}

function checkOptionsOf(command: string, allowed: readonly OptionName[], values: Values): void {
  const misplaced = (Object.keys(values) as OptionName[]).find(
    (name) => name !== "help" && name !== "version" && !allowed.includes(name),
  );
  if (misplaced === undefined) return;
  const owners = [...commandOptions].filter(([, names]) => names.includes(misplaced)).map(([name]) => name);
  throw new UsageError(`--${misplaced} is an option of ${owners.join(" and ")}, not of ${command}`);
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

/** The flags win over config `tls:`; either way certificate and key come as a pair. */
function tlsFiles(values: Values, fromConfig: TlsConfig | undefined): TlsConfig | undefined {
  const cert = values["tls-cert"];
  const key = values["tls-key"];
  if (cert === undefined && key === undefined) return fromConfig;
  if (cert === undefined) throw new UsageError("--tls-key needs --tls-cert");
  if (key === undefined) throw new UsageError("--tls-cert needs --tls-key");
  return { cert, key };
}

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  return pkg.version;
}

main(process.argv.slice(2)).catch((err: unknown) => {
  // process.exit rather than exitCode: a gateway that failed halfway may hold handles open. Its log lines go first.
  flushHeldLines();
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
