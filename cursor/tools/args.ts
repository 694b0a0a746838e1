// Strict readers for model tool arguments (docs/protocol/cursor-tools.md §2.4: no silent defaults for wrong types).
// Each reader checks one property against the tool's JSON schema and throws ArgsError with a message the model can act
// on. Properties the schema does not name are ignored, as JSON Schema without additionalProperties allows.

export class ArgsError extends Error {}

type Args = Record<string, unknown>;

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function quoted(values: readonly string[]): string {
  return values.map((v) => `"${v}"`).join(", ");
}

export function requiredString(args: Args, key: string): string {
  const value = args[key];
  if (value === undefined) throw new ArgsError(`"${key}" is required`);
  if (typeof value !== "string") throw new ArgsError(`"${key}" must be a string, got ${describe(value)}`);
  return value;
}

export function optionalString(args: Args, key: string): string | undefined {
  return args[key] === undefined ? undefined : requiredString(args, key);
}

export function optionalBoolean(args: Args, key: string): boolean | undefined {
  const value = args[key];
  if (value === undefined) return undefined;
  if (typeof value !== "boolean") throw new ArgsError(`"${key}" must be a boolean, got ${describe(value)}`);
  return value;
}

/** Whole numbers only: every numeric argument of these tools lands in an int32/uint32 proto field. */
export function optionalInteger(args: Args, key: string, min = INT32_MIN, max = INT32_MAX): number | undefined {
  const value = args[key];
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value)) {
    throw new ArgsError(`"${key}" must be a whole number, got ${typeof value === "number" ? value : describe(value)}`);
  }
  if (value < min || value > max) throw new ArgsError(`"${key}" must be between ${min} and ${max}, got ${value}`);
  return value;
}

export function requiredBoolean(args: Args, key: string): boolean {
  if (args[key] === undefined) throw new ArgsError(`"${key}" is required`);
  return optionalBoolean(args, key)!;
}

export function requiredInteger(args: Args, key: string, min = INT32_MIN, max = INT32_MAX): number {
  if (args[key] === undefined) throw new ArgsError(`"${key}" is required`);
  return optionalInteger(args, key, min, max)!;
}

export function optionalEnum<T extends string>(args: Args, key: string, allowed: readonly T[]): T | undefined {
  const value = optionalString(args, key);
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new ArgsError(`"${key}" must be one of ${quoted(allowed)}, got "${value}"`);
  }
  return value as T;
}

/** An array of strings; with `allowed`, every item must be one of those values (a JSON-schema enum). */
export function optionalStringArray(args: Args, key: string, allowed?: readonly string[]): string[] | undefined {
  const value = args[key];
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw new ArgsError(`"${key}" must be an array of strings, got ${describe(value)}`);
  value.forEach((item, i) => {
    if (typeof item !== "string") throw new ArgsError(`"${key}[${i}]" must be a string, got ${describe(item)}`);
    if (allowed && !allowed.includes(item)) {
      throw new ArgsError(`"${key}[${i}]" must be one of ${quoted(allowed)}, got "${item}"`);
    }
  });
  return value as string[];
}

export function optionalObject(args: Args, key: string): Args | undefined {
  const value = args[key];
  if (value === undefined) return undefined;
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ArgsError(`"${key}" must be an object, got ${describe(value)}`);
  }
  return value as Args;
}

/** Runs a parser and turns an ArgsError into the `{ invalid }` answer of ToolDriver.started. */
export function parseOrInvalid<T>(tool: string, parse: () => T): { ok: T } | { invalid: string } {
  try {
    return { ok: parse() };
  } catch (err) {
    if (err instanceof ArgsError) return { invalid: `Invalid arguments for ${tool}: ${err.message}.` };
    throw err;
  }
}

/** An array of objects with at least `min` items, each read by `item`; an error names the item it is about. */
export function requiredObjectArray<T>(args: Args, key: string, min: number, item: (o: Args) => T): T[] {
  const value = args[key];
  if (value === undefined) throw new ArgsError(`"${key}" is required`);
  if (!Array.isArray(value)) throw new ArgsError(`"${key}" must be an array, got ${describe(value)}`);
  if (value.length < min) throw new ArgsError(`"${key}" needs at least ${min} item${min === 1 ? "" : "s"}`);
  return value.map((o: unknown, i) => {
    const at = `${key}[${i}]`;
    if (typeof o !== "object" || o === null || Array.isArray(o))
      throw new ArgsError(`"${at}" must be an object, got ${describe(o)}`);
    try {
      return item(o as Args);
    } catch (e) {
      // Name the item the property belongs to, so the model can find it.
      if (e instanceof ArgsError) throw new ArgsError(`${at}: ${e.message}`);
      throw e;
    }
  });
}
