// Every recorded run of the real CLI 2.1.328 (test/fixtures/claude-code) replayed through the driver's parser,
// mapper and process machine: the WorkerEvents each produces, and what the driver writes back for the recorded
// permission decisions.
import { expect } from "chai";
import { readdirSync } from "node:fs";
import type { WorkerEvent } from "../../workers/types.js";
import { fixturePath } from "../support/util.js";
import { type Replay, brief, replayRecording } from "./replay.js";

/** Brief lines, with a run of deltas of one block collapsed to `text.delta <block> ×N`. */
function sequence(events: readonly WorkerEvent[]): string[] {
  const out: string[] = [];
  let run: { key: string; count: number } | undefined;
  for (const event of events) {
    if (event.type === "text.delta" || event.type === "reasoning.delta") {
      const key = `${event.type} ${event.blockId}`;
      if (run?.key === key) {
        run.count += 1;
        out[out.length - 1] = `${key} ×${run.count}`;
        continue;
      }
      run = { key, count: 1 };
      out.push(`${key} ×1`);
      continue;
    }
    run = undefined;
    out.push(brief(event));
  }
  return out;
}

/** Deltas of each block concatenate to its completed text. */
function expectDeltasMatchCompletions(events: readonly WorkerEvent[]): void {
  const streamed = new Map<string, string>();
  for (const event of events) {
    if (event.type === "text.delta" || event.type === "reasoning.delta")
      streamed.set(event.blockId, (streamed.get(event.blockId) ?? "") + event.text);
    if ((event.type === "text.completed" || event.type === "reasoning.completed") && streamed.has(event.blockId)) {
      expect(event.text, event.blockId).to.equal(streamed.get(event.blockId));
    }
  }
}

const ready = "worker.ready 2.1.328 default";
const finished = (events: readonly WorkerEvent[]) => events.filter((e) => e.type === "turn.finished");

describe("claude-code driver: replay of the recorded CLI runs", () => {
  const replays = new Map<string, Replay>();
  const replay = (scenario: string): Replay => {
    if (!replays.has(scenario)) replays.set(scenario, replayRecording(scenario));
    return replays.get(scenario)!;
  };

  it("covers every recording in the fixture folder", () => {
    const scenarios = readdirSync(fixturePath("claude-code"))
      .filter((f) => f.endsWith(".ndjson") && !f.endsWith(".requests.ndjson"))
      .map((f) => f.replace(/\.ndjson$/, ""))
      .sort();
    expect(scenarios).to.deep.equal([...covered].sort());
  });

  const covered = new Set<string>();
  const scenario = (name: string, title: string, body: (r: Replay) => void) => {
    covered.add(name);
    it(`${name}: ${title}`, () => {
      const r = replay(name);
      expectDeltasMatchCompletions(r.events);
      body(r);
    });
  };

  scenario("a1-plain-partial", "partial messages stream per content block", (r) => {
    expect(sequence(r.events)).to.deep.equal([
      "turn.started",
      ready,
      "raw system/status",
      "text.delta msg_fake_1:0 ×2",
      'text.completed msg_fake_1:0 "Hello from fake: Say hello please"',
      "turn.finished completed",
    ]);
    const done = finished(r.events)[0];
    expect(done).to.deep.include({ outcome: "completed" });
    expect(done?.type === "turn.finished" && done.usage).to.deep.equal({
      inputTokens: 12,
      outputTokens: 5,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
      costUsd: 0.00014800000000000002,
      durationMs: 135,
      numTurns: 1,
    });
    const readyEvent = r.events.find((e) => e.type === "worker.ready");
    expect(readyEvent).to.deep.include({
      workerSessionId: "41ceb76d-80bf-4078-84c6-e23fe892901d",
      model: "claude-opus-5-5",
    });
    expect(r.exit).to.deep.include({ code: 0, crashed: false });
  });

  scenario("a2-plain-nopartial", "without partial messages the assistant frame completes the block", (r) => {
    expect(sequence(r.events)).to.deep.equal([
      "turn.started",
      ready,
      'text.completed msg_fake_1:0 "Hello from fake: Say hello please"',
      "turn.finished completed",
    ]);
  });

  scenario("a3-startup-idle", "nothing before the first input, and EOF while idle is a clean exit", (r) => {
    expect(r.events).to.deep.equal([]);
    expect(r.exit).to.deep.include({ code: 0, signal: null, crashed: false });
  });

  const permissionTurn = (resultLine: string, second: string) => [
    "turn.started",
    ready,
    "raw system/status",
    "text.delta msg_fake_1:0 ×1",
    'text.completed msg_fake_1:0 "Using Bash."',
    "tool.called toolu_fake_1 Bash",
    "interaction.requested permission Bash",
    resultLine,
    "raw system/status",
    "text.delta msg_fake_2:0 ×2",
    second,
    "turn.finished completed",
  ];

  scenario(
    "b1-permission-allow",
    "can_use_tool becomes a permission interaction; allow is written exactly as recorded",
    (r) => {
      expect(sequence(r.events)).to.deep.equal(
        permissionTurn(
          'tool.result toolu_fake_1 "(Bash completed with no output)"',
          'text.completed msg_fake_2:0 "Tool said: (Bash completed with no output)"',
        ),
      );
      const request = r.events.find((e) => e.type === "interaction.requested");
      expect(request).to.deep.include({ id: "a957a056-adc5-47ab-ae6c-40d643958d38", kind: "permission" });
      const payload = request?.type === "interaction.requested" ? request.payload : {};
      expect(payload).to.include({
        tool_name: "Bash",
        tool_use_id: "toolu_fake_1",
        description: "Run the requested command",
      });
      expect(payload.input).to.deep.equal({
        command: "touch created-by-tool.txt",
        description: "Run the requested command",
      });
      expect(payload.permission_suggestions).to.be.an("array").that.is.not.empty;
      expect(payload).to.have.property("blocked_path");
      expect(r.answers).to.have.length(1);
      expect(r.answers[0]?.driver).to.deep.equal(r.answers[0]?.recorded);
    },
  );

  scenario("b2-permission-deny", "deny is written exactly as recorded and the tool result is an error", (r) => {
    expect(sequence(r.events)).to.deep.equal(
      permissionTurn(
        'tool.result toolu_fake_1 error "The user declined this command."',
        'text.completed msg_fake_2:0 "Tool said: The user declined this command. (error)"',
      ),
    );
    expect(r.answers[0]?.driver).to.deep.equal(r.answers[0]?.recorded);
  });

  scenario(
    "b3-permission-wrong-shape",
    "the driver answers {behavior, updatedInput}, not the {allowed, reason} the CLI rejected",
    (r) => {
      expect(r.answers[0]?.recorded).to.have.nested.property("response.response.allowed", true);
      expect(r.answers[0]?.driver).to.deep.equal({
        type: "control_response",
        response: {
          subtype: "success",
          request_id: "4e7bbbd8-0ffb-4e37-ae9b-4e4fa6b0327f",
          response: {
            behavior: "allow",
            updatedInput: { command: "touch wrong-shape.txt", description: "Run the requested command" },
          },
        },
      });
      const result = r.events.find((e) => e.type === "tool.result");
      expect(result).to.deep.include({ id: "toolu_fake_1", isError: true });
    },
  );

  scenario("b4-read-in-cwd", "a Read inside the workdir needs no interaction", (r) => {
    expect(sequence(r.events)).to.deep.equal([
      "turn.started",
      ready,
      'text.completed msg_fake_1:0 "Using Read."',
      "tool.called toolu_fake_1 Read",
      'tool.result toolu_fake_1 "1\\thello from the scratch workdir\\n2\\t"',
      'text.completed msg_fake_2:0 "Tool said: 1\\thello from the scratch workdir\\n2\\t"',
      "turn.finished completed",
    ]);
  });

  scenario(
    "c1-initialize-interrupt",
    "an interrupted turn ends `stopped` with the partial text; the next turn completes",
    (r) => {
      expect(sequence(r.events)).to.deep.equal([
        "turn.started",
        ready,
        "raw system/status",
        "text.delta msg_fake_1:0 ×2",
        "raw user",
        'text.completed msg_fake_1:0 "tick0 tick1 "',
        "turn.finished stopped aborted_streaming",
        "turn.started",
        "raw system/status",
        "text.delta msg_fake_2:0 ×2",
        'text.completed msg_fake_2:0 "Hello from fake: [Request interrupted by user] After the"',
        "turn.finished completed",
      ]);
      expect(finished(r.events)[0]).to.deep.include({
        message: "[ede_diagnostic] result_type=user last_content_type=n/a stop_reason=null",
      });
    },
  );

  scenario("c2-interrupt-idle", "control responses are the control channel's, never events", (r) => {
    expect(sequence(r.events)).to.deep.equal(["raw system/status"]);
    expect(r.replies).to.deep.equal([]);
  });

  scenario("d1-eof-after-input", "EOF right after the input: the turn completes, exit 0", (r) => {
    expect(sequence(r.events)).to.deep.equal([
      "turn.started",
      ready,
      "raw system/status",
      "text.delta msg_fake_1:0 ×2",
      'text.completed msg_fake_1:0 "Hello from fake: Say hello then stop"',
      "turn.finished completed",
    ]);
    expect(r.exit).to.deep.include({ code: 0, crashed: false });
  });

  scenario("d2-eof-mid-turn", "EOF mid-turn is not a cancel: all 40 deltas, completed, exit 0", (r) => {
    expect(sequence(r.events)).to.deep.equal([
      "turn.started",
      ready,
      "raw system/status",
      "text.delta msg_fake_1:0 ×40",
      brief(r.events.find((e) => e.type === "text.completed")!),
      "turn.finished completed",
    ]);
    expect(r.exit).to.deep.include({ code: 0, crashed: false });
  });

  scenario("e1-second-input-mid-turn", "an input queued during a streaming turn becomes its own turn", (r) => {
    expect(sequence(r.events).filter((l) => l.startsWith("turn."))).to.deep.equal([
      "turn.started",
      "turn.finished completed",
      "turn.started",
      "turn.finished completed",
    ]);
  });

  scenario("e2-thinking", "thinking streams as reasoning in its own block", (r) => {
    expect(sequence(r.events)).to.deep.equal([
      "turn.started",
      ready,
      "raw system/status",
      "raw system/thinking_tokens",
      "reasoning.delta msg_fake_1:0 ×1",
      'reasoning.completed msg_fake_1:0 "Pondering the request."',
      "text.delta msg_fake_1:1 ×2",
      'text.completed msg_fake_1:1 "Thought about it."',
      "turn.finished completed",
    ]);
  });

  scenario(
    "e3-second-input-during-tool",
    "an input during a permission prompt is folded: two inputs, one turn",
    (r) => {
      expect(r.inputIds).to.have.length(2);
      expect(finished(r.events)).to.have.length(1);
      expect(r.answers[0]?.driver).to.deep.equal(r.answers[0]?.recorded);
    },
  );

  scenario(
    "e4-replay-user-messages",
    "command_lifecycle drives input.queued/started/completed; a queued input opens the next turn",
    (r) => {
      expect(sequence(r.events).filter((l) => /^(input|turn)\./.test(l))).to.deep.equal([
        "input.queued input-1",
        "turn.started input-1",
        "input.started input-1 turn",
        "input.queued input-2",
        "turn.finished completed",
        "input.completed input-1",
        "turn.started input-2",
        "input.started input-2 turn",
        "turn.finished completed",
        "input.completed input-2",
      ]);
      // The replayed user frames (isReplay) are not tool results or text.
      expect(sequence(r.events).filter((l) => l === "raw user")).to.have.length(2);
      expect(r.exit).to.deep.include({ code: 0, crashed: false });
    },
  );

  scenario("e5-uuid-without-replay", "a uuid alone turns on the lifecycle", (r) => {
    expect(sequence(r.events)).to.deep.equal([
      "input.queued input-1",
      "turn.started input-1",
      "input.started input-1 turn",
      ready,
      'text.completed msg_fake_1:0 "Hello from fake: First with uuid"',
      "turn.finished completed",
      "input.completed input-1",
    ]);
    expect(r.exit).to.deep.include({ code: 0, crashed: false });
  });

  scenario(
    "f1-api-500",
    "retries are steps, the synthetic API error is turn.error (not text), outcome api_error; exit 1 is no crash",
    (r) => {
      expect(sequence(r.events)).to.deep.equal([
        "turn.started",
        ready,
        "raw system/status",
        "step api_retry",
        "step api_retry",
        "turn.error api_error",
        "turn.finished api_error api_error",
      ]);
      expect(r.events.some((e) => e.type === "text.completed")).to.equal(false);
      expect(r.events.find((e) => e.type === "step")).to.deep.include({
        detail: { attempt: 1, max_retries: 2, retry_delay_ms: 544, error_status: 500, error: "server_error" },
      });
      expect(r.events.find((e) => e.type === "turn.error"))
        .to.have.property("message")
        .that.matches(/^API Error: 500/);
      expect(r.exit).to.deep.include({ code: 1, signal: null, crashed: false });
    },
  );

  const oneTurn = (text: string) => [
    "turn.started",
    ready,
    `text.completed msg_fake_1:0 ${JSON.stringify(text)}`,
    "turn.finished completed",
  ];

  scenario("g1-session-id", "a first launch with --session-id", (r) => {
    expect(sequence(r.events)).to.deep.equal(oneTurn("Hello from fake: First launch message"));
    expect(r.events[1]).to.deep.include({ workerSessionId: "36982b0d-05a1-4a8c-b07d-22430ec477aa" });
  });

  scenario("g1-resume", "--resume keeps the worker session id", (r) => {
    expect(sequence(r.events)).to.deep.equal(oneTurn("Hello from fake: Second launch message"));
    expect(r.events[1]).to.deep.include({ workerSessionId: "36982b0d-05a1-4a8c-b07d-22430ec477aa" });
  });

  scenario("g1-session-id-reuse", "'already in use' prints nothing on stdout and exits 1", (r) => {
    expect(r.events).to.deep.equal([]);
    expect(r.exit).to.deep.include({ code: 1 });
  });

  scenario("h1-skip-permissions", "--dangerously-skip-permissions as root prints nothing and exits 1", (r) => {
    expect(r.events).to.deep.equal([]);
    expect(r.exit).to.deep.include({ code: 1 });
  });

  scenario(
    "i1-bad-stdin-lines",
    "a non-JSON stdin line killed the CLI (the driver's writer validates every line)",
    (r) => {
      expect(r.events).to.deep.equal([]);
      expect(r.exit).to.deep.include({ code: 1 });
    },
  );

  scenario("i2-unknown-frame-type", "an unknown stdin frame type is ignored by the CLI", (r) => {
    expect(sequence(r.events)).to.deep.equal(oneTurn("Hello from fake: Still alive?"));
  });
});
