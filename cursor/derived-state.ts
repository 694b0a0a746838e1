// The conversation's to-do list and progress updates, derived from the ordered history (docs/protocol/cursor-run.md
// §8.9): a deterministic fold over the persisted results of TodoWrite and UpdateCurrentStep, never a second mutable
// state. The same history always gives the same state, so a restart (or a rollback to an older checkpoint) recovers it
// by folding again. Each local tool's canonical result string is its own strict JSON shape; the drivers write it with
// the encoders below and the fold reads it back with the matching schemas.
import * as z from "zod";
import type { CanonicalMessage } from "../providers/messages.js";

export const TODO_WRITE = "TodoWrite";
export const UPDATE_CURRENT_STEP = "UpdateCurrentStep";

export const TODO_STATUSES = ["pending", "in_progress", "completed", "cancelled"] as const;
export type TodoStatusName = (typeof TODO_STATUSES)[number];

export interface TodoEntry {
  id: string;
  content: string;
  status: TodoStatusName;
}

/** One progress update: the step text and its 1-based position in its turn. */
export interface StepEntry {
  step: string;
  messageIndex: number;
}

/** The progress updates of a run, as Cursor's CommunicateUpdateTurnState holds them. */
export interface StepState {
  history: StepEntry[];
  finalSummary?: string;
  completedSubtitle?: string;
}

export interface DerivedState {
  /** Undefined until a TodoWrite succeeded: the client's own list is then kept as it is. */
  todos?: readonly TodoEntry[];
  /** Undefined until an UpdateCurrentStep succeeded. */
  steps?: StepState;
}

const todoWriteResult = z.strictObject({
  merge: z.boolean(),
  todos: z.array(z.strictObject({ id: z.string(), content: z.string(), status: z.enum(TODO_STATUSES) })),
});
const updateCurrentStepResult = z.strictObject({
  current_step: z.string().optional(),
  message_index: z.number().int().nonnegative(),
  final_summary: z.string().optional(),
  completed_subtitle: z.string().optional(),
});
export type TodoWriteResult = z.infer<typeof todoWriteResult>;
export type UpdateCurrentStepResult = z.infer<typeof updateCurrentStepResult>;

/** A TodoWrite's canonical result: what the call wrote and whether it merged, with a fixed key order. */
export function encodeTodoWriteResult(r: TodoWriteResult): string {
  const todos = r.todos.map(({ id, content, status }) => ({ id, content, status }));
  return JSON.stringify({ merge: r.merge, todos });
}

/** An UpdateCurrentStep's canonical result, with a fixed key order and absent fields left out. */
export function encodeUpdateCurrentStepResult(r: UpdateCurrentStepResult): string {
  return JSON.stringify({
    ...(r.current_step !== undefined ? { current_step: r.current_step } : {}),
    message_index: r.message_index,
    ...(r.final_summary !== undefined ? { final_summary: r.final_summary } : {}),
    ...(r.completed_subtitle !== undefined ? { completed_subtitle: r.completed_subtitle } : {}),
  });
}

/** The list after one TodoWrite: a merge updates items by id in place and appends new ones; otherwise it replaces. */
export function applyTodoWrite(current: readonly TodoEntry[] | undefined, r: TodoWriteResult): TodoEntry[] {
  if (!r.merge) return r.todos.map((t) => ({ ...t }));
  const next = (current ?? []).map((t) => ({ ...t }));
  for (const todo of r.todos) {
    const at = next.findIndex((t) => t.id === todo.id);
    if (at >= 0) next[at] = { ...todo };
    else next.push({ ...todo });
  }
  return next;
}

function applyStep(current: StepState | undefined, r: UpdateCurrentStepResult): StepState {
  const history = [...(current?.history ?? [])];
  if (r.current_step !== undefined) history.push({ step: r.current_step, messageIndex: r.message_index });
  const finalSummary = r.final_summary ?? current?.finalSummary;
  const completedSubtitle = r.completed_subtitle ?? current?.completedSubtitle;
  return {
    history,
    ...(finalSummary !== undefined ? { finalSummary } : {}),
    ...(completedSubtitle !== undefined ? { completedSubtitle } : {}),
  };
}

/** A result string that is not its tool's shape: stored history is corrupt, never silently skipped. */
export class DerivedStateError extends Error {}

function parse<T>(schema: z.ZodType<T>, m: Extract<CanonicalMessage, { role: "tool" }>): T {
  let json: unknown;
  try {
    json = JSON.parse(m.content);
  } catch {
    throw new DerivedStateError(`${m.toolName} result ${JSON.stringify(m.toolCallId)} is not JSON`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? `${issue.path.join(".")}: ` : "";
    throw new DerivedStateError(`${m.toolName} result ${JSON.stringify(m.toolCallId)}: ${where}${issue?.message}`);
  }
  return parsed.data;
}

/** One message's effect; results of other tools, error results and every other message change nothing. */
export function stepDerivedState(state: DerivedState, m: CanonicalMessage): DerivedState {
  if (m.role !== "tool" || m.isError) return state;
  if (m.toolName === TODO_WRITE) return { ...state, todos: applyTodoWrite(state.todos, parse(todoWriteResult, m)) };
  if (m.toolName === UPDATE_CURRENT_STEP)
    return { ...state, steps: applyStep(state.steps, parse(updateCurrentStepResult, m)) };
  return state;
}

/** The state an ordered history leads to (from `start`, so a caller can continue a fold it already holds). */
export function foldDerivedState(messages: readonly CanonicalMessage[], start: DerivedState = {}): DerivedState {
  return messages.reduce(stepDerivedState, start);
}
