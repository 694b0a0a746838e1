// `npm run diagrams` / `byok diagrams`: writes docs/lifecycle/<name>.mmd and <name>.svg for every lifecycle machine,
// plus the index README, all generated from the machine definitions (Graphviz as WebAssembly: no browser needed).
import { mkdir, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import type { AnyStateMachine } from "xstate";
import { aepConnectionMachine } from "../../machines/aep-connection.js";
import { aepInteractionMachine } from "../../machines/aep-interaction.js";
import { aepSessionMachine } from "../../machines/aep-session.js";
import { aepTurnMachine } from "../../machines/aep-turn.js";
import { checkpointMachine } from "../../machines/checkpoint.js";
import { modelCallMachine } from "../../machines/model-call.js";
import { pendingExecMachine } from "../../machines/pending-exec.js";
import { requestStreamMachine } from "../../machines/request-stream.js";
import { runMachine } from "../../machines/run.js";
import { toolRoundMachine } from "../../machines/tool-round.js";
import { workerProcessMachine } from "../../machines/worker-process.js";
import { toDot, toMermaid } from "./graph.js";

export interface Lifecycle {
  name: string;
  machine: AnyStateMachine;
  guarantees: string;
}

export const lifecycles: Lifecycle[] = [
  {
    name: "request-stream",
    machine: requestStreamMachine,
    guarantees:
      "One per request_id. BidiAppend messages are admitted strictly in append_seqno order: duplicates are dropped, a gap waits (bounded), unsequenced messages pass through. Every outbound frame is kept in the backlog so a reconnecting RunSSE subscriber receives the whole stream again; a heartbeat follows 5 s of silence and is never stored. With no subscriber for 30 s the run is abandoned (canceled). After the EndStream the stream stays replayable for 30 s, then disappears; a request_id that starts again at append_seqno 1 with a new run_request is reused.",
  },
  {
    name: "run",
    machine: runMachine,
    guarantees:
      "One per run. Loads the history (fetching blobs the store lacks with get_blob_args and verifying their SHA-256), then alternates model calls and tool rounds until the provider finishes with stop, then publishes the final sequence. It has exactly three endings — succeeded, failed, canceled — each entered once and each committing the run's terminal state and EndStream exactly once. Cancel is accepted in every non-final state; during a model call the pass is stopped first (closing an open thinking segment with its real elapsed time and aborting the provider request), during a tool round the round first aborts its running execs. The first reason to end wins, and events arriving after the end change nothing.",
  },
  {
    name: "model-call",
    machine: modelCallMachine,
    guarantees:
      "One provider pass. Streams text, thinking and placeholder tool cards to the client as they arrive and enforces the strict contract: at most one usage, every block closed, done only with stop or toolUse. HTTP errors, stream errors, a bare EOF, finish length and anything out of contract fail the call; an open thinking segment is closed with its real elapsed time first. STOP from the run (cancel, or a failure found outside the pass) ends it as stopped, closing thinking the same way. Stopping the actor aborts the HTTP request, whether it is still waiting for headers or reading the body.",
  },
  {
    name: "tool-round",
    machine: toolRoundMachine,
    guarantees:
      "The tool calls of one model response. A staged checkpoint is published before any tool runs; each call is driven by its tool driver through PendingExec children; every result is committed durably, in completion order, before its tool_call_completed; once all calls are settled a settled checkpoint is published, and only then does the next model call start. A protocol error, a failed checkpoint or a cancel ends the round, aborting every exec still running (never a backgrounded shell).",
  },
  {
    name: "pending-exec",
    machine: pendingExecMachine,
    guarantees:
      "One per Exec id. While running, client data is forwarded to the tool round; the terminal result is taken exactly once, after which the client's stream_close is a no-op tail. stream_close or throw before the result is a protocol error; abort is sent only for an exec that is still running.",
  },
  {
    name: "checkpoint",
    machine: checkpointMachine,
    guarantees:
      "Builds the new blobs, SETs them to the client, waits for every acknowledgement in the new reference closure (with a deadline), commits blobs, edges and the head switch in one transaction, and only then publishes. A refused or unacknowledged SET or a failed commit ends in failed: no checkpoint referencing an unacknowledged blob is ever published.",
  },
  {
    name: "worker-process",
    machine: workerProcessMachine,
    guarantees:
      "One per OS process of a worker (the Claude Code CLI), numbered by its generation so late callbacks of a replaced process are dropped. Busy while a turn is open or an input is unsettled. Closing is EOF — finish, then exit — with a kill of the process group after a grace period. How the process ended is decided once: a signal, an exit while busy, or a process that never started is a crash; exit code 1 after an error result is a normal end.",
  },
  {
    name: "aep-connection",
    machine: aepConnectionMachine,
    guarantees:
      "One per AEP WebSocket. The first frame must be init within 30 s, else an error and close; frames sent while the session is being found or created are held (at most 64) and replayed in order. ping is answered (seq 0) in every state. After the socket closes nothing reaches the session, and a connection that closed during its attach is never attached.",
  },
  {
    name: "aep-session",
    machine: aepSessionMachine,
    guarantees:
      "One per AEP session: idle ⇄ busy with one turn per accepted input. The worker starts on the first input, as a child per generation; only events of the current generation are routed, so a killed or replaced process changes nothing. A crash or gc leaves the session idle and the next input resumes the worker's own session; reset and cd give it a new one; terminate and delete end the session. A control during a turn ends that turn first, and its state follows the turn's done. An idle worker is reclaimed after 10 minutes.",
  },
  {
    name: "aep-turn",
    machine: aepTurnMachine,
    guarantees:
      "One per execution. state(running) is its first event; input.ack(delivered|failed) follows the durable ledger write; runtime.execution.started precedes all content; worker events that arrive before the delivery is confirmed are held and replayed in order. Stop interrupts the worker and kills it if the interrupt is not acknowledged or not honoured within the grace. It ends in exactly one of completed, failed, stopped, whose entry alone emits error (failed only), then done, then settles the runtime fact after done.",
  },
  {
    name: "aep-interaction",
    machine: aepInteractionMachine,
    guarantees:
      "One per permission_request, question_request or elicitation_request. It ends exactly once: answered by the client, denied automatically after 5 minutes, withdrawn by the worker, or canceled with its turn; the answer is written only to the worker generation that asked. A request that reuses an id is a new actor, so an old timer can never deny it.",
  },
];

export const LIFECYCLE_DIR = fileURLToPath(new URL(".", import.meta.url));

function indexReadme(): string {
  const sections = lifecycles.map(
    (l) =>
      `## ${l.name}\n\n![${l.name}](${l.name}.svg)\n\nMermaid source: [${l.name}.mmd](${l.name}.mmd)\n\n${l.guarantees}\n`,
  );
  return [
    "# Lifecycles",
    "",
    "Generated by `npm run diagrams` from the machine definitions in `machines/`; a test fails when these files differ from",
    "what the current machines generate. Do not edit by hand.",
    "",
    ...sections,
  ].join("\n");
}

/** Every generated file: name → contents. */
export async function renderDiagrams(): Promise<Map<string, string>> {
  const { instance } = await import("@viz-js/viz");
  const viz = await instance();
  const files = new Map<string, string>();
  for (const l of lifecycles) {
    files.set(`${l.name}.mmd`, toMermaid(l.machine));
    files.set(`${l.name}.svg`, viz.renderString(toDot(l.machine), { format: "svg" }));
  }
  files.set("README.md", indexReadme());
  return files;
}

export async function writeDiagrams(dir: string = LIFECYCLE_DIR): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (const [name, contents] of await renderDiagrams()) {
    await writeFile(join(dir, name), contents);
    console.log(`wrote ${join(dir, name)}`);
  }
}
