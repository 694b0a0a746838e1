// Reading the config file's text: the error a bad config raises, YAML parsed without quoting the offending line (it
// may hold a key), an issue's path as the user wrote it, and the value checks the schema uses.
import { statSync } from "node:fs";
import { parse as parseYaml, YAMLParseError } from "yaml";

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

// yaml's own messages quote the offending source line, which may hold a key; keep only the position.
export function parseYamlQuietly(text: string, source: string): unknown {
  try {
    return parseYaml(text);
  } catch (err) {
    if (!(err instanceof YAMLParseError)) throw err;
    const at = err.linePos?.[0];
    const where = at === undefined ? "" : ` at line ${at.line}, column ${at.col}`;
    throw new ConfigError(`${source}: invalid YAML${where} (${err.code})`);
  }
}

export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  if (path.length === 0) return "(top level)";
  return path.map((p, i) => (typeof p === "number" ? `[${p}]` : i === 0 ? String(p) : `.${String(p)}`)).join("");
}

export function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

export function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
}
