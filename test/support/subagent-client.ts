// The client side of subagents for wire-level tests: Cursor answers a parent's subagent_args by opening the child as
// a run of its own against the same backend, with the parent headers on every call (docs/protocol/cursor-run.md
// §12.2), then answers the parent's Exec with subagent_result: at once for a background child (its agent id only),
// after the child's stream ended for a foreground one. Background completions come back as new parent runs.
import { create } from "@bufbuild/protobuf";
import {
  BackgroundTaskCompletionReason,
  BackgroundTaskKind,
  BackgroundTaskStatus,
  ConversationActionSchema,
  type ConversationStateStructure,
  type ExecServerMessage,
  type SubagentArgs,
  SubagentResultSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { ExecPlan } from "./client-responder.js";
import type { CursorClient, RunHandle, RunHooks } from "./cursor-client.js";
import type { FakeOpenAI } from "./fake-openai.js";

export interface StartedChild {
  args: SubagentArgs;
  agentId: string;
  run: RunHandle;
}

export interface ChildScript {
  /** The fake provider the child's model calls go to. */
  fake: FakeOpenAI;
  /** The final message Cursor reports for a foreground child. */
  finalMessage: string;
  /** Per-child hooks, e.g. a silent Exec that keeps the child running. */
  hooks?: RunHooks;
}

/**
 * Hooks for a parent run: each subagent_args starts a child (scripted by `scriptFor`, in the order the parent sent
 * them) and is answered as Cursor does. `children` lists the children started so far.
 */
export function subagentHooks(
  client: CursorClient,
  parent: () => RunHandle,
  scriptFor: (args: SubagentArgs, index: number) => ChildScript,
): { hooks: RunHooks; children: StartedChild[] } {
  const children: StartedChild[] = [];
  const onExec = (exec: ExecServerMessage): ExecPlan | undefined => {
    if (exec.message.case !== "subagentArgs") return undefined;
    const args = exec.message.value;
    const script = scriptFor(args, children.length);
    const agentId = `agent-${parent().requestId.slice(0, 8)}-${children.length + 1}`;
    const run = client.startRun({
      conversationId: agentId,
      modelId: args.modelId,
      text: args.prompt,
      credentials: { apiKey: "sk-e2e-subagent", baseUrl: script.fake.baseUrl },
      headers: { "x-parent-request-id": parent().requestId, "x-parent-agent-tool-call-id": args.toolCallId },
      ...(script.hooks ? { hooks: script.hooks } : {}),
    });
    children.push({ args, agentId, run });
    const background = args.runInBackground === true;
    return {
      ...(background ? {} : { holdUntil: run.done }),
      result: {
        case: "subagentResult",
        value: create(SubagentResultSchema, {
          result: {
            case: "success",
            value: { agentId, ...(background ? {} : { finalMessage: script.finalMessage }) },
          },
        }),
      },
    };
  };
  return { hooks: { onExec }, children };
}

/** A parent run whose action reports finished background subagents, on the parent's latest checkpoint. */
export function startCompletionRun(
  client: CursorClient,
  opts: {
    conversationId: string;
    modelId: string;
    fake: FakeOpenAI;
    checkpoint: ConversationStateStructure;
    finished: Array<{ child: StartedChild; detail: string }>;
  },
): RunHandle {
  const completions = opts.finished.map(({ child, detail }) => ({
    taskId: child.agentId,
    kind: BackgroundTaskKind.SUBAGENT,
    status: BackgroundTaskStatus.SUCCESS,
    title: child.args.prompt.split("\n")[0]!,
    detail,
    outputPath: `/tmp/transcripts/${child.agentId}.txt`,
    reason: BackgroundTaskCompletionReason.TASK_FINISHED,
    subagentId: child.agentId,
    toolCallId: child.args.toolCallId,
  }));
  return client.startRun({
    conversationId: opts.conversationId,
    modelId: opts.modelId,
    checkpoint: opts.checkpoint,
    credentials: { apiKey: "sk-e2e-subagent", baseUrl: opts.fake.baseUrl },
    customize(request) {
      request.action = create(ConversationActionSchema, {
        action: { case: "backgroundTaskCompletionAction", value: { completions } },
      });
    },
  });
}

/** A run on the parent conversation asking the server to cancel one subagent. */
export function startCancelSubagentRun(
  client: CursorClient,
  opts: { conversationId: string; modelId: string; fake: FakeOpenAI; subagentId: string },
): RunHandle {
  return client.startRun({
    conversationId: opts.conversationId,
    modelId: opts.modelId,
    credentials: { apiKey: "sk-e2e-subagent", baseUrl: opts.fake.baseUrl },
    customize(request) {
      request.action = create(ConversationActionSchema, {
        action: { case: "cancelSubagentAction", value: { subagentId: opts.subagentId } },
      });
    },
  });
}

/** The progress a checkpoint files by parent Task call id, each as [[step, message index]…, summary, subtitle]. */
export function progressOf(checkpoint: ConversationStateStructure): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(checkpoint.communicateUpdateStatesByParentToolCallId).map(([callId, s]) => [
      callId,
      [s.history.map((h) => [h.step, h.messageIndex]), s.finalSummary, s.completedSubtitle],
    ]),
  );
}
