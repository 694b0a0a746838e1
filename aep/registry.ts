// Live AEP sessions by server id and by client key (docs/protocol/README.md §3.2: the key is the client's, the id is
// ours). Opens are serialised so two inits with the same key cannot create two sessions; a key whose session is not in
// memory is revived from the store (its worker resumes on the next input).
import { randomUUID } from "node:crypto";
import { AttachRefused } from "../machines/aep-connection.js";
import type { AepStore } from "../store/index.js";
import { DEFAULT_WORKER, type WorkerKind } from "../workers/types.js";
import { AepSession, type SessionDeps, type SessionLink } from "./session.js";

/** Live sessions (each may hold a worker process of ~190 MB); beyond it detached idle ones are put away first. */
export const MAX_LIVE_SESSIONS = 64;

export interface OpenRequest {
  sessionKey?: string;
  /** Who opens it (admission.ts ownerOf): a session made by one token is refused to another. */
  owner: string;
  /** init data.last_seq: the client is replayed the logged events after it. */
  lastSeq?: number;
  /** init.worker: the kind a new session runs on; an existing session keeps its own. */
  worker?: WorkerKind;
  /** Resolves and checks the working directory; called only when a new session is created. */
  workdir: () => Promise<string>;
}

/** A live session as the status page lists it. */
export interface AepSessionSummary {
  sessionId: string;
  sessionKey?: string;
  worker: string;
  state: string;
  attached: boolean;
}

export class AepRegistry {
  private readonly sessions = new Map<string, AepSession>();
  private opening: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: AepStore,
    private readonly deps: Omit<SessionDeps, "onForget">,
    private readonly maxLive: number = MAX_LIVE_SESSIONS,
  ) {}

  /** Finds or creates the session and attaches `link`; `isOpen` is checked last so a closed socket never attaches. */
  open(request: OpenRequest, link: SessionLink, isOpen: () => boolean): Promise<AepSession> {
    const next = this.opening.then(() => this.openNow(request, link, isOpen));
    this.opening = next.catch(() => undefined);
    return next;
  }

  /** The sessions in memory, for the status page. */
  list(): AepSessionSummary[] {
    return [...this.sessions.values()].map((s) => ({
      sessionId: s.sessionId,
      ...(s.sessionKey === undefined ? {} : { sessionKey: s.sessionKey }),
      worker: s.worker,
      state: s.state,
      attached: s.attached,
    }));
  }

  async close(): Promise<void> {
    await this.opening;
    const sessions = [...this.sessions.values()];
    this.sessions.clear();
    await Promise.all(sessions.map((s) => s.close()));
  }

  private async openNow(request: OpenRequest, link: SessionLink, isOpen: () => boolean): Promise<AepSession> {
    let session = request.sessionKey
      ? [...this.sessions.values()].find((s) => s.sessionKey === request.sessionKey)
      : undefined;
    let created = false;
    if (!session) {
      await this.makeRoom();
      const stored = request.sessionKey ? await this.store.findSessionByKey(request.sessionKey) : undefined;
      if (stored) {
        session = this.adopt(new AepSession(stored, this.sessionDeps()));
      } else {
        const record = {
          sessionId: `sess_${randomUUID()}`,
          ...(request.sessionKey ? { sessionKey: request.sessionKey } : {}),
          owner: request.owner,
          worker: request.worker ?? DEFAULT_WORKER,
          workdir: await request.workdir(),
          workerSessionId: randomUUID(),
          workerStarted: false,
          state: "created" as const,
          lastSeq: 0,
        };
        await this.store.createSession(record);
        session = this.adopt(new AepSession(record, this.sessionDeps()));
        created = true;
      }
    }
    if (session.state === "terminated") {
      // A terminated session's key opens it again: the stored facts come back, the worker resumes (docs/protocol/aep.md
      // §9.4).
      this.sessions.delete(session.sessionId);
      const stored = await this.store.getSession(session.sessionId);
      if (!stored) throw new AttachRefused("SESSION_NOT_FOUND", "the session is gone");
      session = this.adopt(new AepSession(stored, this.sessionDeps()));
    }
    await this.claim(session, request.owner);
    if (session.attached)
      throw new AttachRefused(
        "SESSION_ALREADY_CONNECTED",
        `session ${session.sessionId} already has a connection; retry once it has closed`,
      );
    if (!isOpen()) throw new AttachRefused("INTERNAL_ERROR", "connection closed during init");
    await session.attach(link, created, request.lastSeq);
    return session;
  }

  /** A session_key is bound to the token that created it; one stored before owners existed is bound now. */
  private async claim(session: AepSession, owner: string): Promise<void> {
    if (session.owner === owner) return;
    if (session.owner !== undefined)
      throw new AttachRefused("UNAUTHORIZED", "this session_key belongs to another token");
    await this.store.updateSession(session.sessionId, { owner });
    session.owner = owner;
  }

  /** Closes detached idle sessions (their facts stay in the store; the key revives them) until there is room. */
  private async makeRoom(): Promise<void> {
    if (this.sessions.size < this.maxLive) return;
    const idle = [...this.sessions.values()].filter((s) => !s.attached && s.state !== "running");
    for (const s of idle.slice(0, this.sessions.size - this.maxLive + 1)) {
      this.sessions.delete(s.sessionId);
      await s.close();
    }
    if (this.sessions.size >= this.maxLive)
      throw new AttachRefused("GATEWAY_OVERLOAD", `${this.maxLive} sessions are live and in use; retry later`);
  }

  private adopt(session: AepSession): AepSession {
    this.sessions.set(session.sessionId, session);
    return session;
  }

  private sessionDeps(): SessionDeps {
    return { ...this.deps, onForget: (id) => this.sessions.delete(id) };
  }
}
