// A local run's first commit (issue 17): the conversation's route, the user message's input anchor and the run's
// row in one immediate transaction, instead of three commits (three fsyncs) before the run has done anything.
import { recordAnchor } from "./anchors.js";
import type { Writer } from "./db.js";
import type { ConversationRoute } from "./routes.js";
import { setConversationRoute } from "./routes.js";
import { createRun, type NewRun } from "./runs.js";

export interface RunStart extends NewRun {
  /** Where the conversation's last run was served: this one, locally. */
  route: ConversationRoute;
  /** A user message's id and the checkpoint it was sent on (docs/protocol/cursor-run.md §12.1); absent for a resume. */
  input?: { messageId: string; baseState: Uint8Array };
}

/** Writes the run's start; returns the input's anchor (the state it was first sent on) when it names one. */
export function beginRun(write: Writer, start: RunStart): Promise<Uint8Array | undefined> {
  return write((tx) => {
    setConversationRoute(tx, start.conversationId, start.route);
    const anchor = start.input && recordAnchor(tx, start.conversationId, start.input);
    createRun(tx, start);
    return anchor;
  });
}
