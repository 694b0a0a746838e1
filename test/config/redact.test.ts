// The one redaction (log/logger.ts): configured secrets and a request's own key never leave in text, the logger
// included; short values (worker env flags) are not treated as secrets.
import { expect } from "chai";
import { createJsonLogger } from "../../log/logger.js";
import { clearSecrets, redact, registerSecrets } from "../../log/logger.js";

describe("secret redaction", () => {
  afterEach(() => clearSecrets());

  it("replaces every configured secret, longest first, and a request's own key", () => {
    registerSecrets(["sk-configured-1234", "sk-configured-1234-longer", "1"]);
    expect(redact("a sk-configured-1234-longer b sk-configured-1234 c 1")).to.equal("a [redacted] b [redacted] c 1");
    expect(redact("key sk-request-key!", "sk-request-key")).to.equal("key [redacted]!");
    expect(redact("nothing here", "")).to.equal("nothing here");
  });

  it("the logger writes no configured secret, whatever field it hides in", () => {
    registerSecrets(["token-abcdefgh"]);
    const lines: string[] = [];
    const log = createJsonLogger({ write: (line: string) => lines.push(line) });
    log.error("provider said", { body: "bad token-abcdefgh", nested: { error: new Error("token-abcdefgh") } });
    expect(lines.join("")).not.to.include("token-abcdefgh");
    expect(lines.join("")).to.include("bad [redacted]");
  });
});
