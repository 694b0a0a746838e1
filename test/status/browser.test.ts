// The status page in a real browser (Debian's Chromium driven by playwright-core): loaded while a scripted Cursor
// run is held in its provider call, it shows the run and highlights its state on the Run lifecycle diagram, then
// sees it end, live over the event stream. A screenshot is saved under test-artifacts/ (git-ignored).
import { expect } from "chai";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type BrowserContext, chromium } from "playwright-core";
import { CursorClient } from "../support/cursor-client.js";
import { type FakeOpenAI, startFakeOpenAI } from "../support/fake-openai.js";
import { type GatewayProcess, killAllGateways, startGatewayProcess } from "../support/gateway-process.js";
import { API_KEY, MODEL_ID, PROVIDER_MODEL, gate } from "./status-kit.js";

const CHROMIUM = "/usr/bin/chromium";
const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/", import.meta.url));

describe("status page in Chromium", function () {
  this.timeout(60_000);
  let openai: FakeOpenAI;
  let gw: GatewayProcess;
  let browser: BrowserContext;
  let scratch: string;

  before(async function () {
    // .ci/run installs Debian's chromium, so CI fails without it; a developer machine without it skips.
    if (!existsSync(CHROMIUM)) {
      if (process.env.CI) throw new Error(`${CHROMIUM} is missing: .ci/run should have installed Debian's chromium`);
      return this.skip();
    }
    scratch = await mkdtemp(join(tmpdir(), "byok-status-browser-"));
    openai = await startFakeOpenAI();
    gw = await startGatewayProcess({
      dataDir: join(scratch, "data"),
      config: {
        models: [
          { id: MODEL_ID, provider: "openai-chat", baseUrl: openai.baseUrl, apiKey: API_KEY, model: PROVIDER_MODEL },
        ],
      },
    });
    // A fresh profile in the test's own directory (playwright passes it as --user-data-dir).
    browser = await chromium.launchPersistentContext(join(scratch, "profile"), {
      executablePath: CHROMIUM,
      viewport: { width: 1400, height: 1000 },
      headless: true,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
  });

  after(async () => {
    await browser?.close();
    await killAllGateways();
    await openai?.close();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it("shows a live run in its state on the diagram, sees it end, and a screenshot is saved", async () => {
    const page = await browser.newPage();
    const outside: string[] = [];
    page.on("request", (r) => {
      if (!r.url().startsWith(gw.url)) outside.push(r.url());
    });
    const problems: string[] = [];
    page.on("console", (m) => m.type() === "error" && problems.push(m.text()));
    page.on("pageerror", (e) => problems.push(e.message));

    // Warm usage and recent runs with one finished run, so the screenshot shows every section filled.
    const client = new CursorClient(gw.url);
    openai.enqueue({
      text: "Earlier answer.",
      usage: { prompt_tokens: 1200, completion_tokens: 40, prompt_tokens_details: { cached_tokens: 900 } },
    });
    expect(
      await client.startRun({ conversationId: randomUUID(), modelId: MODEL_ID, text: "earlier" }).done,
    ).to.deep.equal({ ok: true });

    const release = gate();
    openai.enqueue({ text: "Held answer.", holdUntil: release.promise });
    const run = client.startRun({ conversationId: randomUUID(), modelId: MODEL_ID, text: "hold on" });
    await openai.waitForRequests(2);

    // Without the slash, as a user types it: redirected to the page.
    await page.goto(`${gw.url}/__byok`);
    expect(page.url()).to.equal(`${gw.url}/__byok/`);
    const liveRow = page.locator(`#live-runs tr[data-request-id="${run.requestId}"]`);
    await liveRow.locator('[data-state="live.calling.streaming"]').waitFor({ timeout: 10_000 });
    expect(await liveRow.textContent())
      .to.include(MODEL_ID)
      .and.include("openai-chat");
    const current = page.locator("#lifecycle g.node.current > title");
    expect(await current.textContent()).to.equal("run_live_calling_streaming");
    expect(await page.locator("#lifecycle g.cluster.current-parent > title").allTextContents()).to.have.members([
      "cluster_run_live",
      "cluster_run_live_calling",
    ]);
    await page.locator("#usage td", { hasText: PROVIDER_MODEL }).first().waitFor();
    expect(await page.locator("#usage").textContent()).to.include("75.0 %");
    await mkdir(ARTIFACTS, { recursive: true });
    const livePath = join(ARTIFACTS, "status-page-live.png");
    await page.screenshot({ path: livePath, fullPage: true });

    release.open();
    expect(await run.done).to.deep.equal({ ok: true });
    const ended = page.locator(`#recent-runs tr[data-request-id="${run.requestId}"] [data-ending="succeeded"]`);
    await ended.waitFor({ timeout: 10_000 });
    expect(await page.locator("#live-runs").textContent()).to.include("No run is live.");
    // A run's end refreshes usage and conversations: the held call's default usage (10 in) joins the earlier 1,200.
    await page.locator("#usage td", { hasText: "1,210" }).waitFor({ timeout: 5_000 });
    const endedPath = join(ARTIFACTS, "status-page-ended.png");
    await page.screenshot({ path: endedPath, fullPage: true });
    console.log(`      screenshots: ${livePath}, ${endedPath}`);

    expect(outside, "requests that left the gateway").to.deep.equal([]);
    expect(problems, "page errors").to.deep.equal([]);
    const text = (await page.content()) + (await page.locator("#config").textContent());
    expect(text).not.to.include(API_KEY);
  });
});
