// The Run lifecycle diagram (docs/lifecycle/run.svg, generated from machines/run.ts) with a run's current state
// highlighted. Graphviz names each state node by its path (<title>run_live_calling_streaming</title>) and each
// compound state's box by `cluster_` + that name, so a state path finds its node and the boxes around it.
import runSvg from "../../docs/lifecycle/run.svg";

const MACHINE = "run";

export class RunDiagram {
  readonly element: HTMLElement;
  private readonly svg: SVGSVGElement | null;

  constructor() {
    this.element = document.createElement("div");
    this.element.className = "diagram";
    const doc = new DOMParser().parseFromString(runSvg, "image/svg+xml");
    this.svg = doc.querySelector("svg");
    if (this.svg) {
      this.svg.removeAttribute("width");
      this.svg.removeAttribute("height");
      this.element.append(document.importNode(this.svg, true));
    }
  }

  /** Highlights the state at `path` (and the compound states containing it); an empty path clears. */
  show(path: readonly string[]): void {
    const svg = this.element.querySelector("svg");
    if (!svg) return;
    for (const el of svg.querySelectorAll(".current, .current-parent"))
      el.classList.remove("current", "current-parent");
    const names = path.map((_, i) => [MACHINE, ...path.slice(0, i + 1)].join("_"));
    for (const g of svg.querySelectorAll("g.node, g.cluster")) {
      const title = g.querySelector("title")?.textContent ?? "";
      const leaf = names[names.length - 1];
      if (title === leaf || title === `cluster_${leaf}`) g.classList.add("current");
      else if (names.some((name) => title === `cluster_${name}`)) g.classList.add("current-parent");
    }
  }
}
