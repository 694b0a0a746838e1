// The shape most tools share: validate the model's arguments, send one Exec, turn its typed result into the
// completion (docs/protocol/cursor-tools.md §5: "Read, Grep are ordinary one-shot Execs"). Each tool supplies only its
// wire shapes.
import type { ToolCall } from "../../proto/gen/agent/v1/agent_pb.js";
import { parseOrInvalid } from "./args.js";
import type { DriverStep, ExecRequest, ToolCompletion, ToolContext, ToolDriver, ToolInvocation } from "./types.js";
import { unexpectedMessage, wireName, type ClientMessage } from "./wire.js";

type ResultCase = NonNullable<ClientMessage["case"]>;
type ResultOf<C extends ResultCase> = Extract<ClientMessage, { case: C }>["value"];

export interface SingleExecTool<A, C extends ResultCase> {
  name: string;
  /** Strict argument validation; throws ArgsError with a message for the model. */
  parse(call: ToolInvocation, ctx: ToolContext): A;
  /** The typed card, empty for the placeholder and with args once they are valid. */
  card(callId: string, args?: A): ToolCall;
  request(call: ToolInvocation, args: A, ctx: ToolContext): ExecRequest;
  /** The client result branch this tool's Exec is answered with. */
  resultCase: C;
  /** The completion for a result; undefined when the result has no branch set (a protocol error). */
  complete(call: ToolInvocation, args: A, result: ResultOf<C>): ToolCompletion | undefined;
}

export function singleExecDriver<A, C extends ResultCase>(tool: SingleExecTool<A, C>): ToolDriver<{ args: A }> {
  const parsed = (call: ToolInvocation, ctx: ToolContext) => parseOrInvalid(tool.name, () => tool.parse(call, ctx));
  return {
    name: tool.name,
    placeholder: (callId) => tool.card(callId),
    started(call, ctx) {
      const p = parsed(call, ctx);
      return "invalid" in p ? p : { toolCall: tool.card(call.callId, p.ok) };
    },
    begin(call, ctx): DriverStep<{ args: A }> {
      const p = parsed(call, ctx);
      if ("invalid" in p) return { kind: "protocol_error", message: p.invalid };
      return { kind: "exec", request: tool.request(call, p.ok, ctx), state: { args: p.ok } };
    },
    onExecMessage(call, state, message) {
      if (message.case !== tool.resultCase) return unexpectedMessage(tool.name, tool.resultCase, message, state);
      const completion = tool.complete(call, state.args, message.value as ResultOf<C>);
      if (!completion)
        return {
          kind: "protocol_error",
          message: `${tool.name}: ${wireName(tool.resultCase)} has no result branch set`,
        };
      return { kind: "complete", completion, state };
    },
  };
}
