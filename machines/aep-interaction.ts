// AepInteraction: one per permission_request / question_request / elicitation_request (docs/protocol/aep.md §9.5,
// §9.6). It ends exactly once: answered by the client, auto-denied after 5 minutes, withdrawn by the worker, or
// canceled with its turn. A late timer or answer of an ended interaction changes nothing: the actor is gone, and a new
// request reusing the id is a new actor of the turn's current worker generation.
import { sendParent, setup } from "xstate";
import type { InteractionAnswer, InteractionKind } from "../workers/types.js";

export interface AepInteractionInput {
  id: string;
  kind: InteractionKind;
  /** The worker process that asked; the answer is written only to it. */
  generation: number;
  /** The child actor id, unique within the turn, so a settled report never removes a newer request with the same id. */
  key: string;
}

export type AepInteractionEvent =
  | { type: "ANSWER"; answer: InteractionAnswer }
  | { type: "WITHDRAW" }
  | { type: "CANCEL" };

/** Sent to the parent turn when the interaction has ended, however it ended. */
export type AepInteractionReport = { type: "INTERACTION_SETTLED"; id: string; key: string };

/** The deny each kind understands (a question is a tool call the worker gated: it is denied like a permission). */
export function autoDeny(kind: InteractionKind): InteractionAnswer {
  if (kind === "elicitation") return { kind: "elicitation", action: "decline" };
  return { kind: "permission", allowed: false, reason: "no answer within 5 minutes: denied automatically" };
}

export const aepInteractionMachine = setup({
  types: {
    context: {} as AepInteractionInput,
    input: {} as AepInteractionInput,
    events: {} as AepInteractionEvent,
  },
  actions: {
    /** Writes the answer to the worker of `generation` (supplied by the session wiring). */
    sendAnswer: (_, _params: { id: string; generation: number; answer: InteractionAnswer }) => {},
    settled: sendParent(
      ({ context }): AepInteractionReport => ({ type: "INTERACTION_SETTLED", id: context.id, key: context.key }),
    ),
  },
  guards: {
    answersThisKind: ({ context, event }) => event.type === "ANSWER" && event.answer.kind === context.kind,
  },
  delays: { autoDenyAfter: 5 * 60_000 },
}).createMachine({
  description:
    "One per permission_request, question_request or elicitation_request. It ends exactly once: answered by " +
    "the client, denied automatically after 5 minutes, withdrawn by the worker, or canceled with its turn; " +
    "the answer is written only to the worker generation that asked. A request that reuses an id is a new " +
    "actor, so an old timer can never deny it.",
  id: "aepInteraction",
  context: ({ input }) => input,
  initial: "pending",
  states: {
    pending: {
      on: {
        ANSWER: {
          guard: "answersThisKind",
          target: "answered",
          actions: {
            type: "sendAnswer",
            params: ({ context, event }) => ({
              id: context.id,
              generation: context.generation,
              answer: (event as { answer: InteractionAnswer }).answer,
            }),
          },
        },
        WITHDRAW: "withdrawn",
        CANCEL: "canceled",
      },
      after: {
        autoDenyAfter: {
          target: "timedOut",
          actions: {
            type: "sendAnswer",
            params: ({ context }) => ({
              id: context.id,
              generation: context.generation,
              answer: autoDeny(context.kind),
            }),
          },
        },
      },
    },
    answered: { type: "final", entry: "settled" },
    timedOut: { type: "final", entry: "settled" },
    /** The worker took the request back (control_cancel_request); nothing is written. */
    withdrawn: { type: "final", entry: "settled" },
    /** The turn ended first; the worker is interrupted or gone, so nothing is written. */
    canceled: { type: "final", entry: "settled" },
  },
});
