// Replays one recorded CLI run (test/fixtures/claude-code/<scenario>.ndjson) through the driver's parser, mapper
// and WorkerProcess machine, with no process: stdout frames in, WorkerEvents out. The recorded stdin answers to
// permission prompts are re-decided through the driver's own answer path, so a test can compare what the driver
// would have written with what the recording wrote.
import { readFileSync } from "node:fs";
import { createActor } from "xstate";
import { type WorkerProcessExit, workerProcessMachine } from "../../machines/worker-process.js";
import { type StdinFrame, asStdoutFrame } from "../../workers/claude-code/frames.js";
import { ClaudeCodeMapper } from "../../workers/claude-code/mapper.js";
import { NdjsonSplitter } from "../../workers/claude-code/ndjson.js";
import { trackingEventOf } from "../../workers/process/host.js";
import type { InteractionAnswer, WorkerEvent } from "../../workers/types.js";
import { fixturePath } from "../support/util.js";

interface RecordedLine {
  t: number;
  dir: "note" | "stdin" | "stdout" | "stderr" | "exit";
  frame: any; // recorded JSON of any shape
}

export interface Replay {
  events: WorkerEvent[];
  /** Frames the driver wrote on its own (answers to requests it cannot serve). */
  replies: StdinFrame[];
  /** Per recorded stdin control_response: what the recording wrote and what the driver writes for that decision. */
  answers: Array<{ recorded: unknown; driver: StdinFrame | undefined }>;
  /** Set when the recording ends with the process's exit. */
  exit: WorkerProcessExit | undefined;
  /** The inputId given to each recorded stdin user frame, in order. */
  inputIds: string[];
}

export function replayRecording(scenario: string): Replay {
  const lines = readFileSync(fixturePath(`claude-code/${scenario}.ndjson`), "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as RecordedLine);
  const replay: Replay = { events: [], replies: [], answers: [], exit: undefined, inputIds: [] };

  const machine = createActor(
    workerProcessMachine.provide({ actions: { reportExit: (_, exit) => void (replay.exit = exit) } }),
    { input: { generation: 1 } },
  ).start();
  const mapper = new ClaudeCodeMapper({
    event: (event) => {
      replay.events.push(event);
      const tracked = trackingEventOf(event);
      if (tracked) machine.send(tracked);
    },
    reply: (frame) => void replay.replies.push(frame),
    controlResponse: () => {},
    abandon: () => {},
  });
  // The same splitter the driver uses, fed the recorded stdout as the bytes the CLI printed.
  const stdout = new NdjsonSplitter(1024 * 1024, (item) => {
    const frame = item.kind === "value" ? asStdoutFrame(item.value) : undefined;
    if (frame) mapper.handle(frame);
  });
  machine.send({ type: "SPAWNED" });

  for (const line of lines) {
    if (line.dir === "stdout") stdout.push(Buffer.from(`${JSON.stringify(line.frame)}\n`));
    if (line.dir === "exit") {
      stdout.end();
      machine.send({ type: "EXITED", code: line.frame.code, signal: line.frame.signal });
    }
    if (line.dir !== "stdin" || typeof line.frame !== "object") continue;
    if (line.frame.type === "user") {
      const inputId = `input-${replay.inputIds.length + 1}`;
      replay.inputIds.push(inputId);
      // The driver always sends a uuid; recordings without one cannot be tracked by the process machine.
      if (typeof line.frame.uuid === "string") {
        mapper.registerInput(inputId, line.frame.uuid);
        machine.send({ type: "INPUT_SENT", inputId });
      }
    }
    if (line.frame.type === "control_response") {
      const response = line.frame.response;
      replay.answers.push({
        recorded: line.frame,
        driver: mapper.interactions.answer(response.request_id, decisionOf(response.response)),
      });
    }
  }
  return replay;
}

/** The user's decision a recorded answer expressed, as the neutral answer the core would pass to the driver. */
function decisionOf(recorded: Record<string, unknown>): InteractionAnswer {
  if (recorded.behavior === "deny") return { kind: "permission", allowed: false, reason: String(recorded.message) };
  return { kind: "permission", allowed: recorded.behavior === "allow" || recorded.allowed === true };
}

/** One short line per event, for readable sequence assertions. */
export function brief(event: WorkerEvent): string {
  switch (event.type) {
    case "text.delta":
    case "text.completed":
    case "reasoning.delta":
    case "reasoning.completed":
      return `${event.type} ${event.blockId} ${JSON.stringify(event.text)}`;
    case "tool.called":
      return `tool.called ${event.id} ${event.name}`;
    case "tool.result":
      return `tool.result ${event.id}${event.isError ? " error" : ""} ${JSON.stringify(event.output.slice(0, 40))}`;
    case "interaction.requested":
      return `interaction.requested ${event.kind} ${String(event.payload.tool_name)}`;
    case "interaction.withdrawn":
      return "interaction.withdrawn";
    case "input.queued":
    case "input.completed":
      return `${event.type} ${event.inputId}`;
    case "input.started":
      return `input.started ${event.inputId} ${event.mode}`;
    case "turn.started":
      return event.inputId ? `turn.started ${event.inputId}` : "turn.started";
    case "turn.finished":
      return `turn.finished ${event.outcome}${event.errorCode ? ` ${event.errorCode}` : ""}`;
    case "turn.error":
      return `turn.error ${event.code}`;
    case "step":
      return `step ${event.name}`;
    case "raw":
      return `raw ${String((event.frame as { type?: string; subtype?: string }).type)}${(event.frame as { subtype?: string }).subtype ? `/${(event.frame as { subtype?: string }).subtype}` : ""}`;
    case "worker.ready":
      return `worker.ready ${event.version} ${event.permissionMode}`;
    case "worker.exited":
      return `worker.exited ${event.code} ${event.signal} crashed=${event.crashed}`;
    default:
      return event.type;
  }
}
