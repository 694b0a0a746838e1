// A few DOM helpers: elements built with text content only (nothing the API returns is parsed as HTML), and the
// number and time formats the tables use.

type Child = Node | string | number | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) if (value !== undefined) el.setAttribute(name, value);
  for (const child of children) {
    if (child === undefined || child === false) continue;
    el.append(typeof child === "number" ? String(child) : child);
  }
  return el;
}

/** A table with a header row, or the `empty` line when there are no rows. */
export function table(headers: string[], rows: HTMLTableRowElement[], empty: string): HTMLElement {
  if (rows.length === 0) return h("p", { class: "empty" }, empty);
  const head = h("tr", {}, ...headers.map((title) => h("th", {}, title)));
  return h("table", {}, h("thead", {}, head), h("tbody", {}, ...rows));
}

export function cells(...values: Child[]): HTMLTableCellElement[] {
  return values.map((v) => h("td", {}, v));
}

const integer = new Intl.NumberFormat("en", { maximumFractionDigits: 0 });

export function count(n: number | undefined): string {
  return n === undefined ? "–" : integer.format(n);
}

export function percent(share: number | null | undefined): string {
  return share === null || share === undefined ? "–" : `${(share * 100).toFixed(1)} %`;
}

export function short(id: string): string {
  return id.length > 12 ? `${id.slice(0, 8)}…` : id;
}

export function clock(at: number): string {
  return new Date(at).toLocaleTimeString("en-GB", { hour12: false });
}

export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = ms / 1000;
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

export function ago(at: number, now: number): string {
  return `${duration(now - at)} ago`;
}
