// One function per section of the page: each turns the facts the API returned into a fresh element.
import { ago, cells, clock, count, duration, h, percent, short, table } from "./dom.js";
import type { AepSessionRow, ConversationRow, LiveRun, RecentRun, UsageRow } from "../types.js";

export type UsageLine = UsageRow & { cacheHitShare: number | null };

/** A row that selects its run for the diagram when clicked. */
function runRow(run: LiveRun, selected: boolean, values: Array<Node | string>): HTMLTableRowElement {
  const row = h("tr", { "data-request-id": run.requestId, class: selected ? "run selected" : "run" });
  row.append(...cells(...values));
  return row;
}

export function stateChip(state: readonly string[]): HTMLElement {
  return h("span", { class: "state", "data-state": state.join(".") }, state.join(" › "));
}

export function liveRuns(runs: LiveRun[], selected: string | undefined, now: number): HTMLElement {
  const rows = runs.map((run) =>
    runRow(run, run.requestId === selected, [
      h("code", { title: run.requestId }, short(run.requestId)),
      h("code", { title: run.conversationId }, short(run.conversationId)),
      run.model,
      run.endpoint,
      stateChip(run.state),
      duration(now - run.startedAt),
    ]),
  );
  return table(["request", "conversation", "model", "endpoint", "state", "running for"], rows, "No run is live.");
}

export function recentRuns(runs: RecentRun[], selected: string | undefined): HTMLElement {
  const rows = runs.map((run) =>
    runRow(run, run.requestId === selected, [
      clock(run.endedAt),
      h("code", { title: run.requestId }, short(run.requestId)),
      run.model,
      endingChip(run),
      h("span", { class: "message" }, run.ending.message ?? ""),
      `${count(run.usage.input)} / ${count(run.usage.output)}`,
      duration(run.endedAt - run.startedAt),
    ]),
  );
  return table(
    ["ended", "request", "model", "ending", "message", "tokens in / out", "took"],
    rows,
    "No run has ended since the gateway started.",
  );
}

function endingChip(run: RecentRun): HTMLElement {
  const { kind, cause, code } = run.ending;
  const detail = kind === "succeeded" ? "" : ` · ${cause ?? ""}${code && code !== kind ? ` (${code})` : ""}`;
  return h("span", { class: `ending ${kind}`, "data-ending": kind }, `${kind}${detail}`);
}

export function usage(rows: UsageLine[]): HTMLElement {
  const lines = rows.map((u) => {
    const bar = h("span", { class: "bar" }, h("span", { class: "fill" }));
    (bar.firstElementChild as HTMLElement).style.width = `${Math.round((u.cacheHitShare ?? 0) * 100)}%`;
    const row = h("tr");
    row.append(
      ...cells(
        u.day,
        u.frontDoor,
        u.model,
        count(u.calls),
        count(u.input),
        count(u.output),
        count(u.cacheRead),
        count(u.cacheWrite),
        h("span", { class: "share" }, bar, percent(u.cacheHitShare)),
      ),
    );
    return row;
  });
  return table(
    ["day (UTC)", "front door", "model", "calls", "input", "output", "cache read", "cache write", "cache hits"],
    lines,
    "No model call has reported usage in this period.",
  );
}

export function conversations(items: ConversationRow[], now: number): HTMLElement {
  const rows = items.map((c) => {
    const row = h("tr");
    row.append(
      ...cells(
        h("code", { title: c.conversationId }, c.conversationId),
        count(c.turns),
        count(c.runs),
        c.lastModel,
        ago(c.lastActivityAt, now),
      ),
    );
    return row;
  });
  return table(["conversation", "turns", "runs", "last model", "last activity"], rows, "No conversation yet.");
}

export function aepSessions(enabled: boolean, sessions: AepSessionRow[]): HTMLElement {
  if (!enabled) return h("p", { class: "empty" }, "The AEP listener is off (--aep-port or aep.port turns it on).");
  const rows = sessions.map((s) => {
    const row = h("tr");
    row.append(
      ...cells(
        h("code", {}, s.sessionId),
        s.sessionKey ?? "–",
        s.worker,
        h("span", { class: `state aep-${s.state}` }, s.state),
        s.attached ? "connected" : "detached",
      ),
    );
    return row;
  });
  return table(["session", "key", "worker", "state", "client"], rows, "No AEP session is live.");
}

export function config(value: unknown): HTMLElement {
  return h("pre", { class: "config" }, JSON.stringify(value, null, 2));
}
