// TodoWrite: a local tool (docs/protocol/cursor-tools.md §5.12). The gateway answers it itself — no Exec, no
// Interaction: tool_call_started and tool_call_completed go out back to back with card update_todos_tool_call and a
// typed UpdateTodosSuccess. The canonical result is the update as strict JSON; the list itself is a fold of those
// results (cursor/derived-state.ts), so the checkpoint's todos are a view of the history.
import { create } from "@bufbuild/protobuf";
import {
  TodoItemSchema,
  TodoStatus,
  UpdateTodosArgsSchema,
  UpdateTodosResultSchema,
} from "../../proto/gen/agent/v1/agent_pb.js";
import type { TodoItem, UpdateTodosArgs, UpdateTodosResult } from "../../proto/gen/agent/v1/agent_pb.js";
import {
  applyTodoWrite,
  encodeTodoWriteResult,
  TODO_STATUSES,
  TODO_WRITE,
  type TodoEntry,
  type TodoStatusName,
  type TodoWriteResult,
} from "../derived-state.js";
import { ArgsError, parseOrInvalid, requiredObjectArray, requiredString } from "./args.js";
import type { DriverStep, ToolDriver } from "./types.js";
import { completed, toolCall } from "./wire.js";

/** The schema's minItems: a list worth tracking has at least two entries. */
const MIN_TODOS = 2;

const STATUS: Record<TodoStatusName, TodoStatus> = {
  pending: TodoStatus.PENDING,
  in_progress: TodoStatus.IN_PROGRESS,
  completed: TodoStatus.COMPLETED,
  cancelled: TodoStatus.CANCELLED,
};

function parseArgs(args: Record<string, unknown>): TodoWriteResult {
  const merge = args.merge;
  const todos = requiredObjectArray(args, "todos", MIN_TODOS, (t) => ({
    id: requiredString(t, "id"),
    content: requiredString(t, "content"),
    status: statusOf(requiredString(t, "status")),
  }));
  if (merge === undefined) throw new ArgsError('"merge" is required');
  if (typeof merge !== "boolean") throw new ArgsError('"merge" must be a boolean');
  return { merge, todos };
}

function statusOf(value: string): TodoStatusName {
  const status = TODO_STATUSES.find((s) => s === value);
  if (!status) throw new ArgsError(`"status" must be one of ${TODO_STATUSES.map((s) => `"${s}"`).join(", ")}`);
  return status;
}

export function todoItem(t: TodoEntry): TodoItem {
  return create(TodoItemSchema, { id: t.id, content: t.content, status: STATUS[t.status] });
}

function cardArgs(update: TodoWriteResult): UpdateTodosArgs {
  return create(UpdateTodosArgsSchema, { todos: update.todos.map(todoItem), merge: update.merge });
}

function card(callId: string, args?: UpdateTodosArgs, result?: UpdateTodosResult) {
  return toolCall(callId, { case: "updateTodosToolCall", value: { args, result } });
}

export const todoWriteDriver: ToolDriver<undefined> = {
  name: TODO_WRITE,
  placeholder: (callId) => card(callId),
  started(call) {
    const p = parseOrInvalid(TODO_WRITE, () => parseArgs(call.args));
    return "invalid" in p ? p : { toolCall: card(call.callId, cardArgs(p.ok)) };
  },
  begin(call, ctx): DriverStep<undefined> {
    const p = parseOrInvalid(TODO_WRITE, () => parseArgs(call.args));
    if ("invalid" in p) return { kind: "protocol_error", message: p.invalid };
    // The card shows the whole list after this update, as it stood when the round began.
    const list = applyTodoWrite(ctx.turn?.todos, p.ok);
    const result = create(UpdateTodosResultSchema, {
      result: { case: "success", value: { todos: list.map(todoItem), totalCount: list.length, wasMerge: p.ok.merge } },
    });
    return completed(undefined, encodeTodoWriteResult(p.ok), false, card(call.callId, cardArgs(p.ok), result));
  },
  onExecMessage: () => ({
    kind: "protocol_error",
    message: `${TODO_WRITE}: the client answered an Exec it was never sent`,
  }),
};
