// Anthropic cache breakpoints move from call to call (providers/anthropic.ts markCacheBreakpoints) while the content
// stays append-only. Prefix checks compare messages with the markers taken out.

type Block = Record<string, unknown>;
interface Message {
  role: string;
  content: unknown;
}

/**
 * The messages without cache_control, and a user message's lone text block back to the plain string it was before a
 * marker needed a block to sit on (the API reads both the same).
 */
export function withoutBreakpoints(messages: readonly Message[]): Message[] {
  return messages.map((m) => {
    if (!Array.isArray(m.content)) return m;
    const content = (m.content as Block[]).map(({ cache_control: _, ...rest }) => rest);
    const lone = m.role === "user" && content.length === 1 && content[0]!.type === "text";
    return { ...m, content: lone ? content[0]!.text : content };
  });
}

/** Indexes of the messages that carry a cache breakpoint. */
export function breakpointsAt(messages: readonly Message[]): number[] {
  return messages.flatMap((m, i) =>
    Array.isArray(m.content) && (m.content as Block[]).some((b) => b.cache_control !== undefined) ? [i] : [],
  );
}
