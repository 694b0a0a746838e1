// The config's `workers.codex` and `workers.acp` blocks (read by engine/config.ts): how the gateway launches an ACP
// agent. env values are secrets: never logged.
import * as z from "zod";

const acpWorkerFields = {
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.string()).optional(),
  /** `session/set_mode` once the session is open (Codex: read-only, auto, full-access). */
  mode: z.string().min(1).optional(),
};

/** `workers.codex`: the command defaults to the pinned codex-acp. */
export const codexWorkerSchema = z.strictObject({ command: z.string().min(1).optional(), ...acpWorkerFields });
/** `workers.acp`: any ACP agent over stdio; its command is required. */
export const acpWorkerSchema = z.strictObject({ command: z.string().min(1), ...acpWorkerFields });

export type AcpWorkerConfig = z.infer<typeof codexWorkerSchema>;
