// The flag checks serve and doctor share (bin/options.ts): log level and form defaults, and the default paths.
import { expect } from "chai";
import { join } from "node:path";
import { defaultConfigFile, parseLogFormat, parseLogLevel } from "../../bin/options.js";

describe("CLI options", () => {
  it("the log form is pretty on a terminal and JSON lines elsewhere, unless --log-format says", () => {
    expect(parseLogFormat(undefined, true)).to.equal("pretty");
    expect(parseLogFormat(undefined, false)).to.equal("json");
    expect(parseLogFormat("json", true)).to.equal("json");
    expect(parseLogFormat("pretty", false)).to.equal("pretty");
  });

  it("the log level comes from --log-level, else BYOK_LOG_LEVEL, else info", () => {
    expect(parseLogLevel(undefined, {})).to.equal("info");
    expect(parseLogLevel(undefined, { BYOK_LOG_LEVEL: "debug" })).to.equal("debug");
    expect(parseLogLevel("error", { BYOK_LOG_LEVEL: "debug" })).to.equal("error");
    expect(() => parseLogLevel(undefined, { BYOK_LOG_LEVEL: "verbose" })).to.throw(
      'BYOK_LOG_LEVEL expects one of trace, debug, info, warn, error, fatal, silent, got "verbose"',
    );
  });

  it("the default config file follows XDG_CONFIG_HOME when it is absolute", () => {
    const saved = process.env.XDG_CONFIG_HOME;
    try {
      process.env.XDG_CONFIG_HOME = "/cfg";
      expect(defaultConfigFile()).to.equal(join("/cfg", "byok-gateway", "config.yaml"));
      process.env.XDG_CONFIG_HOME = "relative/cfg";
      expect(defaultConfigFile()).to.match(/\/\.config\/byok-gateway\/config\.yaml$/);
    } finally {
      if (saved === undefined) delete process.env.XDG_CONFIG_HOME;
      else process.env.XDG_CONFIG_HOME = saved;
    }
  });
});
