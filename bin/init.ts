// `byok init`: copies config.example.yaml to the default config path, never over an existing file.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { ConfigError } from "../engine/config.js";

export const EXAMPLE_CONFIG = new URL("../config.example.yaml", import.meta.url);

/** Writes the example to `target` and returns what to tell the user; refuses when `target` exists. */
export function init(target: string): string {
  mkdirSync(dirname(target), { recursive: true });
  try {
    writeFileSync(target, readFileSync(EXAMPLE_CONFIG), { flag: "wx", mode: 0o600 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
    throw new ConfigError(`${target} already exists; init does not overwrite it (edit it, or move it away first)`);
  }
  return (
    `byok: wrote the example config to ${target}\n` +
    "Keep the models you have keys for, export the variables they name, then check the setup with `byok doctor`.\n"
  );
}
