// Every state of every lifecycle machine has a way to an ending (issue 3): checked on the definitions listed for the
// diagrams, so a machine or state added later is covered without touching this file.
import { expect } from "chai";
import { createMachine } from "xstate";
import { lifecycles } from "../../docs/lifecycle/generate.js";
import { statesWithoutEnding } from "./support/endings.js";

describe("lifecycle machines: every state reaches an ending", () => {
  for (const { name, machine } of lifecycles) {
    it(`${name}: no state without a path to a final state`, () => {
      expect(statesWithoutEnding(machine)).to.deep.equal([]);
    });
  }

  it("the check finds a state added without a way out", () => {
    const machine = createMachine({
      id: "m",
      initial: "a",
      states: {
        a: { on: { GO: "b", STUCK: "c" } },
        b: { type: "final" },
        c: { on: { LOOP: "d" } },
        d: { on: { BACK: "c" } },
      },
    });
    expect(statesWithoutEnding(machine)).to.deep.equal(["m.c", "m.d"]);
  });
});
