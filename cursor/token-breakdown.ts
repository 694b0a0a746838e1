// The checkpoint's context breakdown (docs/protocol/cursor-run.md §9): eight categories whose estimated tokens always
// add up to the provider's authoritative used_tokens. Fixed categories are estimated from what was actually projected
// (UTF-16 characters, ≈0.273 tokens per ASCII character and ≈0.55 per other code unit); the conversation takes the
// rest. When the estimates alone exceed the total, only the non-conversation categories are scaled down (largest
// remainder), so every category stays non-negative and the sum stays exact.
import { create } from "@bufbuild/protobuf";
import {
  PromptTokenBreakdownSnapshotSchema,
  type PromptTokenBreakdownSnapshot,
} from "../proto/gen/agent/v1/agent_pb.js";

export interface BreakdownInput {
  usedTokens: number;
  maxTokens: number;
  systemPrompt: string;
  toolDefinitions: string;
  rules: string;
  /** The runtime messages' skills, MCP instructions and subagent definitions, when the requests carried them. */
  skills?: string;
  mcp?: string;
  subagents?: string;
  /** The summary the history starts with (docs/protocol/cursor-run.md §8.10), when it was compacted. */
  summarizedConversation?: string;
  /** UTF-16 length of everything else projected: user, assistant and tool content. */
  conversationCharacters: number;
}

const FIXED = [
  ["system_prompt", "System prompt"],
  ["tools", "Tool definitions"],
  ["rules", "Rules"],
  ["skills", "Skills"],
  ["mcp", "MCP & dynamic tools"],
  ["subagents", "Subagent definitions"],
  ["summarized_conversation", "Summarized conversation"],
] as const;

export function estimateTokens(text: string): number {
  let ascii = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) < 0x80) ascii++;
  return Math.round(ascii * 0.273 + (text.length - ascii) * 0.55);
}

/** The estimates of the texts every run repeats (system prompts, tool definitions, rules): a handful, bounded. */
const fixedEstimates = new Map<string, number>();
const MAX_FIXED_ESTIMATES = 32;

/**
 * estimateTokens for a text that recurs from run to run: each run's breakdowns and compaction measure the same
 * tens of KiB of system prompt and tool definitions, which was a visible share of a short run's CPU.
 */
export function estimateFixedTokens(text: string): number {
  let tokens = fixedEstimates.get(text);
  if (tokens === undefined) {
    if (fixedEstimates.size >= MAX_FIXED_ESTIMATES) fixedEstimates.clear();
    tokens = estimateTokens(text);
    fixedEstimates.set(text, tokens);
  }
  return tokens;
}

export function tokenBreakdown(input: BreakdownInput): PromptTokenBreakdownSnapshot {
  const texts: Record<(typeof FIXED)[number][0], string> = {
    system_prompt: input.systemPrompt,
    tools: input.toolDefinitions,
    rules: input.rules,
    skills: input.skills ?? "",
    mcp: input.mcp ?? "",
    subagents: input.subagents ?? "",
    summarized_conversation: input.summarizedConversation ?? "",
  };
  const estimates = FIXED.map(([id]) => estimateFixedTokens(texts[id]));
  const fixed = fitWithin(estimates, input.usedTokens);
  const rest = input.usedTokens - fixed.reduce((a, b) => a + b, 0);
  return create(PromptTokenBreakdownSnapshotSchema, {
    totalUsedTokens: input.usedTokens,
    maxTokens: input.maxTokens,
    categories: [
      ...FIXED.map(([id, label], i) => ({ id, label, estimatedTokens: fixed[i]!, characterCount: texts[id].length })),
      {
        id: "conversation",
        label: "Conversation",
        estimatedTokens: rest,
        characterCount: input.conversationCharacters,
      },
    ],
  });
}

/** Scales the estimates down to `total` when they exceed it, keeping integers and an exact sum. */
function fitWithin(estimates: number[], total: number): number[] {
  const sum = estimates.reduce((a, b) => a + b, 0);
  if (sum <= total) return estimates;
  const exact = estimates.map((e) => (e * total) / sum);
  const floors = exact.map(Math.floor);
  let left = total - floors.reduce((a, b) => a + b, 0);
  const order = exact.map((e, i) => [e - Math.floor(e), i] as const).sort((a, b) => b[0] - a[0]);
  for (const [, i] of order) {
    if (left === 0) break;
    floors[i]!++;
    left--;
  }
  return floors;
}
