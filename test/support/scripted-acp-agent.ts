// A small ACP agent for the ACP worker's tests, built on the SDK's agent side: a real ACP peer over stdio (run as
// `node --import tsx test/support/scripted-acp-agent.ts`), whose every prompt turn is scripted by the prompt's text:
//
//   plain       one message in two chunks, a thought before it; end_turn
//   tools       mode change, a plan, a tool call with a location, an in-progress update with a diff, a permission
//               request (the answer's option id is echoed as text), then completed with the diff; end_turn
//   limit       max_tokens                 refusal    refusal             fail    a JSON-RPC error
//   slow        a chunk, then waits for session/cancel and ends `cancelled`
//   deaf        a chunk, then ignores session/cancel and never ends
//   crash       a chunk, then the process exits with code 3
//   flood       one 200 000-character chunk (over a small maxMessageBytes), then waits for session/cancel
//   env NAME    says the value of the environment variable NAME (a secret the gateway must redact)
//   remember X  end_turn; `recall` later answers with X (the session's memory, kept across session/load)
//
// SCRIPTED_ACP_HANG=initialize makes it never answer initialize. SCRIPTED_ACP_STATE names a file where sessions
// are kept, so a restarted agent can session/load them (replaying their history as user/agent chunks first).
import { readFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const stateFile = process.env.SCRIPTED_ACP_STATE;
const memory: Record<string, string> = stateFile ? readState(stateFile) : {};
const cancels = new Map<string, () => void>();
let sessions = 0;

function readState(file: string): Record<string, string> {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as Record<string, string>;
  } catch {
    return {};
  }
}

const text = (t: string): acp.ContentBlock => ({ type: "text", text: t });

const app = acp
  .agent({ name: "scripted-acp-agent" })
  .onRequest("initialize", async () => {
    if (process.env.SCRIPTED_ACP_HANG === "initialize") await new Promise(() => {});
    return {
      protocolVersion: acp.PROTOCOL_VERSION,
      agentCapabilities: { loadSession: true },
      agentInfo: { name: "scripted-acp-agent", version: "1.0.0" },
    };
  })
  .onRequest("session/new", () => {
    sessions += 1;
    const sessionId = `scripted-${process.pid}-${sessions}`;
    memory[sessionId] = "";
    return { sessionId, modes: { currentModeId: "ask", availableModes: modes } };
  })
  .onRequest("session/load", async ({ params, client }) => {
    if (!Object.hasOwn(memory, params.sessionId)) throw acp.RequestError.resourceNotFound(params.sessionId);
    const update = (u: acp.SessionUpdate) =>
      client.notify("session/update", { sessionId: params.sessionId, update: u });
    await update({ sessionUpdate: "user_message_chunk", content: text("an old prompt") });
    await update({ sessionUpdate: "agent_message_chunk", content: text("an old answer") });
    return { modes: { currentModeId: "ask", availableModes: modes } };
  })
  .onRequest("session/set_mode", () => ({}))
  .onNotification("session/cancel", ({ params }) => cancels.get(params.sessionId)?.())
  .onRequest("session/prompt", async ({ params, client }) => {
    const { sessionId } = params;
    const prompt = params.prompt.map((b) => (b.type === "text" ? b.text : "")).join("");
    const update = (u: acp.SessionUpdate) => client.notify("session/update", { sessionId, update: u });
    const say = (t: string) => update({ sessionUpdate: "agent_message_chunk", content: text(t) });
    const [word, arg] = prompt.split(" ");
    switch (word) {
      case "plain":
        await update({ sessionUpdate: "agent_thought_chunk", content: text("pondering") });
        await say("Hello, ");
        await say("world.");
        return { stopReason: "end_turn" };
      case "tools":
        return tools(sessionId, client, update);
      case "limit":
        await say("cut");
        return { stopReason: "max_tokens" };
      case "refusal":
        return { stopReason: "refusal" };
      case "fail":
        throw acp.RequestError.internalError({ reason: "scripted failure" });
      case "flood":
        await say("x".repeat(200_000));
        await new Promise<void>((resolve) => cancels.set(sessionId, resolve));
        return { stopReason: "cancelled" };
      case "slow":
      case "deaf":
        await say("waiting");
        await new Promise<void>((resolve) => {
          if (word === "slow") cancels.set(sessionId, resolve);
        });
        cancels.delete(sessionId);
        return { stopReason: "cancelled" };
      case "crash":
        await say("about to crash");
        process.exit(3);
        break;
      case "env":
        await say(`${arg}=${process.env[arg ?? ""] ?? ""}`);
        return { stopReason: "end_turn" };
      case "remember":
        memory[sessionId] = arg ?? "";
        if (stateFile) writeFileSync(stateFile, JSON.stringify(memory));
        await say("noted");
        return { stopReason: "end_turn" };
      case "recall":
        await say(`the word was ${memory[sessionId] || "(nothing)"}`);
        return { stopReason: "end_turn" };
    }
    await say(`unknown script ${JSON.stringify(prompt)}`);
    return { stopReason: "end_turn" };
  });

const modes: acp.SessionMode[] = [
  { id: "ask", name: "Ask" },
  { id: "code", name: "Code" },
];

async function tools(
  sessionId: string,
  client: acp.AgentContext,
  update: (u: acp.SessionUpdate) => Promise<void>,
): Promise<acp.PromptResponse> {
  const diff: acp.ToolCallContent = { type: "diff", path: "/project/a.txt", oldText: "old\n", newText: "new\n" };
  await update({ sessionUpdate: "current_mode_update", currentModeId: "code" });
  await update({
    sessionUpdate: "plan",
    entries: [{ content: "Edit a.txt", priority: "high", status: "in_progress" }],
  });
  await update({
    sessionUpdate: "tool_call",
    toolCallId: "t1",
    title: "Edit a.txt",
    kind: "edit",
    status: "pending",
    locations: [{ path: "/project/a.txt", line: 3 }],
    rawInput: { path: "/project/a.txt" },
  });
  await update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status: "in_progress", content: [diff] });
  const answer = await client.request("session/request_permission", {
    sessionId,
    toolCall: { toolCallId: "t1", title: "Edit a.txt", kind: "edit" },
    options: [
      { optionId: "yes", name: "Allow", kind: "allow_once" },
      { optionId: "always", name: "Always", kind: "allow_always" },
      { optionId: "never", name: "Never", kind: "reject_always" },
    ],
  });
  const chosen = answer.outcome.outcome === "selected" ? answer.outcome.optionId : "cancelled";
  const status = chosen === "yes" ? "completed" : "failed";
  await update({ sessionUpdate: "tool_call_update", toolCallId: "t1", status, content: [diff] });
  await update({ sessionUpdate: "agent_message_chunk", content: text(`chose ${chosen}`) });
  return { stopReason: "end_turn" };
}

app.connect(
  acp.ndJsonStream(
    Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
    Readable.toWeb(process.stdin) as ReadableStream<Uint8Array>,
  ),
);
