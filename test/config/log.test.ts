import { expect } from "chai";
import { createJsonLogger, createLogger, withFields } from "../../log/logger.js";

function capture() {
  const lines: string[] = [];
  const log = createJsonLogger(
    { write: (line: string) => lines.push(line) },
    () => new Date("2026-01-02T03:04:05.000Z"),
  );
  return { log, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe("JSON-lines logger", () => {
  it("writes one JSON object per line with time, level, message and fields", () => {
    const { log, lines, records } = capture();
    log.info("relay", { method: "GET", status: 200 });
    log.warn("slow");
    log.error("broke", { requestId: "r1" });
    expect(lines.every((l) => l.endsWith("\n") && !l.slice(0, -1).includes("\n"))).to.equal(true);
    expect(records()).to.deep.equal([
      { time: "2026-01-02T03:04:05.000Z", level: "info", msg: "relay", method: "GET", status: 200 },
      { time: "2026-01-02T03:04:05.000Z", level: "warn", msg: "slow" },
      { time: "2026-01-02T03:04:05.000Z", level: "error", msg: "broke", requestId: "r1" },
    ]);
  });

  it("censors credential-named keys at any depth", () => {
    const { log, lines, records } = capture();
    log.info("request", {
      authorization: "Bearer a",
      headers: {
        Authorization: "Bearer b",
        "x-api-key": "c",
        "Proxy-Authorization": "d",
        cookie: "e",
        "content-type": "f",
      },
      model: { id: "gpt", apiKey: "g", api_key: "h" },
      list: [{ apiKey: "i", ok: 1 }],
      l1: { l2: { l3: { l4: { l5: { x_byok_token: "j", accessToken: "k", client_secret: "l", input_tokens: 3 } } } } },
    });
    const joined = lines.join("");
    for (const leaked of ["Bearer a", "Bearer b", '"c"', '"d"', '"e"', '"g"', '"h"', '"i"', '"j"', '"k"', '"l"'])
      expect(joined).not.to.contain(leaked);
    expect(records()[0]).to.deep.include({
      authorization: "[redacted]",
      headers: {
        Authorization: "[redacted]",
        "x-api-key": "[redacted]",
        "Proxy-Authorization": "[redacted]",
        cookie: "[redacted]",
        "content-type": "f",
      },
      model: { id: "gpt", apiKey: "[redacted]", api_key: "[redacted]" },
      list: [{ apiKey: "[redacted]", ok: 1 }],
      l1: {
        l2: {
          l3: {
            l4: {
              l5: {
                x_byok_token: "[redacted]",
                accessToken: "[redacted]",
                client_secret: "[redacted]",
                input_tokens: 3,
              },
            },
          },
        },
      },
    });
  });

  it("renders errors, bigints and dates readably", () => {
    const { log, records } = capture();
    const err = Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" });
    log.error("failed", { error: err, seq: 12n, at: new Date("2026-01-01T00:00:00Z") });
    expect(records()[0]).to.deep.include({
      error: { name: "Error", message: "connect ECONNREFUSED", code: "ECONNREFUSED" },
      seq: "12",
      at: "2026-01-01T00:00:00.000Z",
    });
  });

  it("survives circular fields", () => {
    const { log, records } = capture();
    const a: Record<string, unknown> = { name: "a" };
    a.self = a;
    const shared = { x: 1 };
    log.info("cycle", { a, left: shared, right: shared });
    expect(records()[0]).to.deep.include({ a: { name: "a", self: "[circular]" }, left: { x: 1 }, right: { x: 1 } });
  });

  it("writes nothing below its level", () => {
    const lines: string[] = [];
    const log = createLogger({ level: "warn", out: { write: (line: string) => lines.push(line) } });
    log.info("quiet");
    log.warn("loud");
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).to.deep.equal(["loud"]);
  });

  it("binds fields to every line, a line's own field winning", () => {
    const { log, records } = capture();
    const run = withFields(log, { request_id: "r1", model: "gpt" });
    run.info("a");
    run.error("b", { model: "provider-name" });
    expect(records()).to.deep.include.members([
      { time: "2026-01-02T03:04:05.000Z", level: "info", msg: "a", request_id: "r1", model: "gpt" },
      { time: "2026-01-02T03:04:05.000Z", level: "error", msg: "b", request_id: "r1", model: "provider-name" },
    ]);
  });

  it("renders one readable line per record in the pretty form, credentials censored", () => {
    const lines: string[] = [];
    const log = createLogger({
      format: "pretty",
      out: { write: (line: string) => lines.push(line) },
      now: () => new Date(2026, 0, 2, 3, 4, 5),
    });
    log.warn("relay", { status: 502, headers: { authorization: "Bearer secret-value" } });
    expect(lines).to.deep.equal([
      '[03:04:05.000] WARN: relay {"status":502,"headers":{"authorization":"[redacted]"}}\n',
    ]);
  });
});
