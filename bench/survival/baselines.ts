/**
 * The contexts other systems would serve right after a compaction, built from their public
 * descriptions as pure functions of the same transcript prefix and the same summarizer output
 * (the summary text the run's summarizer wrote at that compaction), so that only the rule that
 * decides what stays differs. Sizes are core's `estimateTokens` (characters / 4), the estimate
 * OpenCode itself uses. Each returns the context as the texts a model would read, one per message.
 */
import { estimateTokens, toolInputStrings } from '@compactor/core';
import type { MessageInput } from '@compactor/db';

export const BASELINES = ['opencode', 'codex', 'anthropic-clear', 'openrouter-middle-out'] as const;
export type Baseline = (typeof BASELINES)[number];

type Part = MessageInput['parts'][number];
type ToolPartInput = Extract<Part, { type: 'tool' }>;

/** What of a part the model reads: text, a tool's name, input strings and result; not reasoning. */
function partText(part: Part, clearedOutput: string | null): string {
  if (part.type === 'text') return part.text;
  if (part.type !== 'tool') return '';
  const tool = part as ToolPartInput;
  const result = clearedOutput ?? tool.output ?? tool.error ?? '';
  return [tool.tool, ...toolInputStrings(tool.input), result].join('\n');
}

export function messageText(message: MessageInput, cleared: ReadonlySet<ToolPartInput> = new Set()): string {
  return message.parts
    .map((p) => partText(p, p.type === 'tool' && cleared.has(p as ToolPartInput) ? CLEARED : null))
    .filter((t) => t !== '')
    .join('\n');
}

/** OpenCode's text for a pruned output, and Anthropic's for a cleared tool result (close enough). */
const CLEARED = '[Old tool result content cleared]';

const toolParts = (messages: readonly MessageInput[]): ToolPartInput[] =>
  messages.flatMap((m) => m.parts.filter((p): p is ToolPartInput => p.type === 'tool'));

/** The newest messages whose texts fit in `budget` tokens, in order (whole messages only). */
function newestFitting(texts: readonly string[], budget: number): string[] {
  const kept: string[] = [];
  let used = 0;
  for (let i = texts.length - 1; i >= 0; i--) {
    const tokens = estimateTokens(texts[i]!);
    if (used + tokens > budget) break;
    used += tokens;
    kept.unshift(texts[i]!);
  }
  return kept;
}

/**
 * The tool parts OpenCode's prune clears: walking back from the newest output, skipping the last
 * 2 user turns, every output once the total passes `PRUNE_PROTECT = 40,000` is a candidate, and
 * the candidates are cleared only when they sum to more than `PRUNE_MINIMUM = 20,000`.
 */
export function opencodePruned(messages: readonly MessageInput[]): Set<ToolPartInput> {
  const userIndexes = messages.flatMap((m, i) => (m.role === 'user' ? [i] : []));
  const turnsStart = userIndexes.length >= 2 ? userIndexes.at(-2)! : -1;
  const prunable = toolParts(turnsStart === -1 ? [] : messages.slice(0, turnsStart)).reverse();
  let total = 0;
  const candidates: ToolPartInput[] = [];
  let candidateTokens = 0;
  for (const part of prunable) {
    const tokens = estimateTokens(part.output ?? '');
    total += tokens;
    if (total > 40_000) {
      candidates.push(part);
      candidateTokens += tokens;
    }
  }
  return new Set(candidateTokens > 20_000 ? candidates : []);
}

/**
 * OpenCode: "later versions keep a recent tail (`tail_start_id`): budget
 * `min(15000, max(2000, usable × 0.25))`" beside the summary; before that, prune walks back over
 * tool outputs, protects the newest `PRUNE_PROTECT = 40,000` tokens of them and clears the older
 * ones when they exceed `PRUNE_MINIMUM = 20,000` (both strict), skipping the last 2 user turns
 * (docs/PRESETS.md `opencode`; ../shared/REFERENCE.md).
 */
export function opencodeContext(
  messages: readonly MessageInput[],
  summary: string,
  usable: number,
): string[] {
  const cleared = opencodePruned(messages);
  const tailBudget = Math.min(15_000, Math.max(2_000, usable * 0.25));
  const tail = newestFitting(
    messages.map((m) => messageText(m, cleared)),
    tailBudget,
  );
  return ['What did we do so far?', summary, ...tail];
}

/**
 * Codex CLI: the compacted history is the newest user messages up to
 * `COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000` (newest first, the oldest one that crosses it
 * truncated), then the summary as a user message (`build_compacted_history`). Bounded here by
 * what is left of the usable window beside the summary, so a 16k window's context fits.
 */
export function codexContext(messages: readonly MessageInput[], summary: string, usable: number): string[] {
  let budget = Math.min(20_000, Math.max(0, usable - estimateTokens(summary)));
  const kept: string[] = [];
  const users = messages.filter((m) => m.role === 'user').map((m) => messageText(m));
  for (let i = users.length - 1; i >= 0 && budget > 0; i--) {
    const text = users[i]!;
    const tokens = estimateTokens(text);
    kept.unshift(tokens <= budget ? text : text.slice(text.length - budget * 4));
    budget -= tokens;
  }
  return [...kept, summary];
}

/**
 * Anthropic's context editing (`clear_tool_uses_20250919`): tool results beyond the newest
 * `keep: 3` tool uses are replaced by a placeholder; when that is not enough the history before
 * the kept messages is summarised (compaction). Context: the summary, then the newest messages
 * that fit in what is left of the usable window, with all but the 3 newest tool results cleared.
 */
export function anthropicClearContext(
  messages: readonly MessageInput[],
  summary: string,
  usable: number,
): string[] {
  const cleared = new Set(toolParts(messages).slice(0, -3));
  const tail = newestFitting(
    messages.map((m) => messageText(m, cleared)),
    Math.max(0, usable - estimateTokens(summary)),
  );
  return [summary, ...tail];
}

/**
 * OpenRouter's `middle-out` transform: no summary; "messages are removed or truncated from the
 * middle of the prompt until it fits", so the first and the latest messages stay.
 */
export function middleOutContext(messages: readonly MessageInput[], usable: number): string[] {
  const texts = messages.map((m) => messageText(m));
  let total = texts.reduce((sum, t) => sum + estimateTokens(t), 0);
  while (total > usable && texts.length > 1) {
    const [dropped] = texts.splice(Math.floor(texts.length / 2), 1);
    total -= estimateTokens(dropped!);
  }
  return texts;
}

export function baselineContext(
  baseline: Baseline,
  messages: readonly MessageInput[],
  summary: string,
  usable: number,
): string[] {
  switch (baseline) {
    case 'opencode':
      return opencodeContext(messages, summary, usable);
    case 'codex':
      return codexContext(messages, summary, usable);
    case 'anthropic-clear':
      return anthropicClearContext(messages, summary, usable);
    case 'openrouter-middle-out':
      return middleOutContext(messages, usable);
  }
}
