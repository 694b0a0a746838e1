// The status page (docs/status-api.md): reads the JSON API, follows the live event stream, and redraws the section
// whose facts changed. The run lifecycle diagram shows the selected run's state: the newest live run unless the user
// clicked another row.
import "./style.css";
import { h } from "./dom.js";
import { RunDiagram } from "./diagram.js";
import * as render from "./render.js";
import { stateChip } from "./render.js";
import type { AepSessionRow, ConversationRow, LiveRun, RecentRun, StatusEvent } from "../types.js";

const API = "/__byok/api";
/** The slower facts (usage, conversations, AEP sessions) are read again this often, and whenever a run ends. */
const REFRESH_MS = 10_000;
const PAGE_SIZE = 20;

interface State {
  live: Map<string, LiveRun>;
  recent: RecentRun[];
  /** The run the diagram shows, when the user picked one. */
  picked: string | undefined;
  conversations: { total: number; offset: number; items: ConversationRow[] };
  connected: boolean;
}

const state: State = {
  live: new Map(),
  recent: [],
  picked: undefined,
  conversations: { total: 0, offset: 0, items: [] },
  connected: false,
};

const diagram = new RunDiagram();
const slots = {
  live: h("div"),
  recent: h("div"),
  usage: h("div"),
  conversations: h("div"),
  aep: h("div"),
  config: h("div"),
  diagramCaption: h("p", { class: "caption" }),
  connection: h("span", { class: "connection" }),
  version: h("span", { class: "version" }),
  pager: h("div", { class: "pager" }),
};

function section(id: string, title: string, ...body: Node[]): HTMLElement {
  return h("section", { id, class: "card" }, h("h2", {}, title), ...body);
}

function layout(): void {
  document.body.append(
    h("header", {}, h("h1", {}, "byok-gateway"), slots.version, slots.connection),
    h(
      "main",
      {},
      section("live-runs", "Live runs", slots.live),
      section("lifecycle", "Run lifecycle", slots.diagramCaption, diagram.element),
      section("recent-runs", "Recent runs", slots.recent),
      section("usage", "Token usage and prompt-cache hits (last 30 days)", slots.usage),
      section("conversations", "Conversations", slots.conversations, slots.pager),
      section("aep-sessions", "AEP sessions", slots.aep),
      section("config", "Configuration (secrets masked)", slots.config),
    ),
  );
  slots.live.addEventListener("click", pick);
  slots.recent.addEventListener("click", pick);
}

function pick(event: Event): void {
  const row = (event.target as Element).closest("tr[data-request-id]");
  if (!row) return;
  state.picked = row.getAttribute("data-request-id") ?? undefined;
  drawRuns();
}

/** The run the diagram follows: the picked one while it is known, else the newest live run, else the last ended. */
function selectedRun(): LiveRun | undefined {
  const picked = state.picked;
  const known = picked && (state.live.get(picked) ?? state.recent.find((r) => r.requestId === picked));
  if (known) return known;
  const live = [...state.live.values()];
  return live[live.length - 1] ?? state.recent[0];
}

function drawRuns(): void {
  const now = Date.now();
  const selected = selectedRun();
  slots.live.replaceChildren(render.liveRuns([...state.live.values()], selected?.requestId, now));
  slots.recent.replaceChildren(render.recentRuns(state.recent, selected?.requestId));
  diagram.show(selected?.state ?? []);
  slots.diagramCaption.replaceChildren(
    ...(selected
      ? [
          "Request ",
          h("code", {}, selected.requestId),
          "ending" in selected ? " ended in " : " is in ",
          stateChip(selected.state),
        ]
      : ["No run to show yet: the diagram highlights the state of the newest live run."]),
  );
}

function drawConnection(): void {
  slots.connection.textContent = state.connected ? "● live" : "○ reconnecting…";
  slots.connection.className = state.connected ? "connection up" : "connection down";
}

async function get<T>(path: string): Promise<T> {
  const res = await fetch(`${API}${path}`, { headers: { accept: "application/json" } });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return (await res.json()) as T;
}

async function refresh(): Promise<void> {
  const { offset } = state.conversations;
  const [usage, conversations, aep] = await Promise.all([
    get<{ rows: render.UsageLine[] }>("/usage?days=30"),
    get<State["conversations"]>(`/conversations?limit=${PAGE_SIZE}&offset=${offset}`),
    get<{ enabled: boolean; sessions: AepSessionRow[] }>("/aep/sessions"),
  ]);
  slots.usage.replaceChildren(render.usage(usage.rows));
  state.conversations = conversations;
  slots.conversations.replaceChildren(render.conversations(conversations.items, Date.now()));
  drawPager();
  slots.aep.replaceChildren(render.aepSessions(aep.enabled, aep.sessions));
}

function drawPager(): void {
  const { total, offset } = state.conversations;
  const turn = (delta: number) => () => {
    state.conversations.offset = Math.max(0, offset + delta);
    void refresh();
  };
  const previous = h("button", { type: "button" }, "← newer");
  const next = h("button", { type: "button" }, "older →");
  previous.disabled = offset === 0;
  next.disabled = offset + PAGE_SIZE >= total;
  previous.addEventListener("click", turn(-PAGE_SIZE));
  next.addEventListener("click", turn(PAGE_SIZE));
  const last = Math.min(total, offset + PAGE_SIZE);
  slots.pager.replaceChildren(previous, h("span", {}, `${total ? offset + 1 : 0}–${last} of ${total}`), next);
}

let refreshing: ReturnType<typeof setTimeout> | undefined;

/** Many runs ending at once cost one refresh. */
function refreshSoon(): void {
  if (refreshing) return;
  refreshing = setTimeout(() => {
    refreshing = undefined;
    void refresh().catch(() => undefined);
  }, 250);
}

function follow(): void {
  const events = new EventSource(`${API}/events`);
  events.onopen = () => {
    state.connected = true;
    drawConnection();
  };
  events.onerror = () => {
    state.connected = false;
    drawConnection();
  };
  events.addEventListener("snapshot", (e) => {
    const { runs } = JSON.parse((e as MessageEvent<string>).data) as { runs: LiveRun[] };
    state.live = new Map(runs.map((r) => [r.requestId, r]));
    void get<{ runs: RecentRun[] }>("/runs/recent").then(({ runs: recent }) => {
      state.recent = recent;
      drawRuns();
    });
  });
  for (const type of ["run.started", "run.state", "run.ended"] as const) {
    events.addEventListener(type, (e) => apply(JSON.parse((e as MessageEvent<string>).data) as StatusEvent));
  }
}

function apply(event: StatusEvent): void {
  if (event.type === "run.started") state.live.set(event.run.requestId, event.run);
  if (event.type === "run.state") {
    const run = state.live.get(event.requestId);
    if (run) state.live.set(event.requestId, { ...run, state: event.state, stateSince: event.at });
  }
  if (event.type === "run.ended") {
    state.live.delete(event.run.requestId);
    state.recent = [event.run, ...state.recent.filter((r) => r.requestId !== event.run.requestId)].slice(0, 100);
    refreshSoon();
  }
  drawRuns();
}

async function start(): Promise<void> {
  layout();
  drawConnection();
  drawRuns();
  follow();
  const { version, config } = await get<{ version: string; config: unknown }>("/config");
  slots.version.textContent = `v${version}`;
  slots.config.replaceChildren(render.config(config));
  await refresh();
  setInterval(() => void refresh().catch(() => undefined), REFRESH_MS);
  setInterval(() => state.live.size > 0 && drawRuns(), 1_000);
}

void start();
