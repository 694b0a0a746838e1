// The start of an ACP connection: `initialize`, then the session — `session/resume` (or `session/load`) of the
// agent session this worker session had, else `session/new` with cwd = the workdir — and the configured mode.
// An agent that answers `session/new` with auth_required is authenticated once through an env-var method whose
// variables the worker was given (Codex's CODEX_API_KEY / OPENAI_API_KEY), then asked again.
import * as acp from "@agentclientprotocol/sdk";

/** What the client tells the agent it can do: nothing beyond permissions (see workers/README.md). */
const clientCapabilities: acp.ClientCapabilities = {
  fs: { readTextFile: false, writeTextFile: false },
  terminal: false,
};

export interface HandshakeRequest {
  readonly workdir: string;
  /** The agent's session id this worker session had before, if any. */
  readonly previous: string | undefined;
  /** `session/set_mode` after the session opens (e.g. Codex's read-only, auto, full-access). */
  readonly mode: string | undefined;
  /** The environment the agent was started with (to pick an env-var auth method it can use). */
  readonly env: Readonly<Record<string, string>>;
}

export interface Handshake {
  readonly sessionId: string;
  readonly agentName: string | undefined;
  readonly agentVersion: string | undefined;
  readonly modeId: string | undefined;
  /** The previous agent session was asked for and could not be continued. */
  readonly resumeUnavailable: boolean;
}

export async function handshake(agent: acp.ClientContext, request: HandshakeRequest): Promise<Handshake> {
  const init = await agent.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities });
  const continued = request.previous ? await continueSession(agent, init, request, request.previous) : undefined;
  const opened = continued ?? (await newSession(agent, init, request));
  let modeId = opened.modeId;
  if (request.mode !== undefined && request.mode !== modeId) {
    await agent.request("session/set_mode", { sessionId: opened.sessionId, modeId: request.mode });
    modeId = request.mode;
  }
  return {
    sessionId: opened.sessionId,
    agentName: init.agentInfo?.name,
    agentVersion: init.agentInfo?.version,
    modeId,
    resumeUnavailable: request.previous !== undefined && continued === undefined,
  };
}

interface Opened {
  sessionId: string;
  modeId: string | undefined;
}

async function continueSession(
  agent: acp.ClientContext,
  init: acp.InitializeResponse,
  request: HandshakeRequest,
  sessionId: string,
): Promise<Opened | undefined> {
  const params: acp.LoadSessionRequest = { sessionId, cwd: request.workdir, mcpServers: [] };
  try {
    if (init.agentCapabilities?.sessionCapabilities?.resume) {
      const resumed = await agent.request("session/resume", params);
      return { sessionId, modeId: resumed.modes?.currentModeId };
    }
    if (init.agentCapabilities?.loadSession) {
      // Its history replay arrives before any prompt, so the worker shows none of it.
      const loaded = await agent.request("session/load", params);
      return { sessionId, modeId: loaded?.modes?.currentModeId };
    }
  } catch {
    // The agent no longer has it (deleted, another HOME): a fresh session, said with resume_unavailable.
  }
  return undefined;
}

async function newSession(
  agent: acp.ClientContext,
  init: acp.InitializeResponse,
  request: HandshakeRequest,
): Promise<Opened> {
  const params: acp.NewSessionRequest = { cwd: request.workdir, mcpServers: [] };
  try {
    const created = await agent.request("session/new", params);
    return { sessionId: created.sessionId, modeId: created.modes?.currentModeId };
  } catch (err) {
    const method = isAuthRequired(err) ? envAuthMethod(init.authMethods, request.env) : undefined;
    if (!method) throw err;
    await agent.request("authenticate", { methodId: method });
    const created = await agent.request("session/new", params);
    return { sessionId: created.sessionId, modeId: created.modes?.currentModeId };
  }
}

/** ACP's auth_required error code. */
const AUTH_REQUIRED = -32000;

function isAuthRequired(err: unknown): boolean {
  return err instanceof acp.RequestError && err.code === AUTH_REQUIRED;
}

/** The first `env_var` auth method whose variables are all set (read loosely: the type is not in stable v1). */
function envAuthMethod(methods: unknown, env: Readonly<Record<string, string>>): string | undefined {
  if (!Array.isArray(methods)) return undefined;
  for (const method of methods as Array<Record<string, unknown>>) {
    if (method.type !== "env_var" || typeof method.id !== "string" || !Array.isArray(method.vars)) continue;
    const names = (method.vars as Array<Record<string, unknown>>).map((v) => v.name);
    if (names.every((name) => typeof name === "string" && Boolean(env[name]))) return method.id;
  }
  return undefined;
}
