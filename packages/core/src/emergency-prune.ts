/**
 * Emergency clamping: clearing tool outputs in the part an emergency compaction keeps.
 *
 * An emergency (forced) compaction keeps at least the last 2 messages (Opal). When those hold a
 * giant tool output (a 150k-token file read on a 128k window), every emergency compaction keeps
 * it and the session never fits again; the third one finds no cut at all. No cut may enter a
 * message, so the kept outputs themselves must go: they are pruned the usual way (lazy deletion,
 * `compactedAt`, the placeholder is shown), ignoring `protectUserTurns` and the 20,000 minimum,
 * which exist to spare the prompt cache when nothing is on fire.
 *
 * Order: the largest output first (ties: the older first). One oversized output is the usual
 * culprit, and clearing it alone is the smallest loss; oldest-first would clear every small
 * older output before reaching it. Outputs of protected tools (`pruning.protectedTools`, e.g.
 * `skill`: instructions the agent loaded) go only once every other output is cleared: losing
 * them is bad, a session that can never answer again is worse.
 */
import type { Message, ModelInfo, ToolPart } from './model';
import type { Policy } from './policy';
import type { PrunablePart } from './prune';
import { partTokens, storedTokens } from './tokens';
import { usableTokens } from './triggers';

/** Budgets for {@link selectEmergencyPrune}: usually the keep budget and {@link emergencyRoomTokens}. */
export interface EmergencyPruneOptions {
  /** Prune largest-first until the messages take at most this many tokens (the keep budget). */
  targetTokens: number;
  /**
   * What they must fit at the very least (default `targetTokens`): `fits` compares with it. When
   * the target (or this limit, if smaller) cannot be reached even by clearing every output, only
   * what fitting this limit needs is cleared.
   */
  limitTokens?: number | null;
  /** Outputs of these tools are cleared only after every other output. */
  protectedTools?: readonly string[];
}

/** The outputs an emergency compaction clears in its kept part, and whether the kept part then fits. */
export interface EmergencyPruneSelection {
  /** Outputs to prune, in the order chosen (largest first, protected tools last). */
  parts: PrunablePart[];
  /** Tokens the messages lose: each output's tokens minus its placeholder's. */
  savedTokens: number;
  /** Tokens of the messages as the context view counts them (`messageTokens`), before and after. */
  tokensBefore: number;
  tokensAfter: number;
  /**
   * `true` when `tokensAfter <= limitTokens`. `false`: even with every completed output cleared,
   * the messages (a huge user text, tool inputs, errors) take `tokensAfter` tokens: the
   * compaction cannot make the session fit and should fail with a "cannot fit" error instead of
   * looping. Do not apply `parts` then.
   */
  fits: boolean;
}

interface Candidate {
  part: PrunablePart;
  saved: number;
  protected: boolean;
  /** Position in the messages, for the older-first tie-break. */
  order: number;
}

/** Tokens pruning `part` saves in the context view: its output's count minus the placeholder's. */
function pruneSaving(part: ToolPart): number {
  if (part.status !== 'completed' || part.compactedAt !== null) return 0;
  return partTokens(part) - partTokens({ ...part, compactedAt: 'pruned' });
}

/**
 * The tool outputs to clear so `messages` (the tail an emergency compaction keeps, e.g.
 * `plan.kept`) fit: completed, not yet pruned outputs whose placeholder is smaller, largest
 * first, protected tools last, until the messages take at most `min(targetTokens, limitTokens)`
 * — or, when clearing every output cannot reach that, at most `limitTokens`. Pure: the caller
 * marks the parts like a prune does.
 */
export function selectEmergencyPrune(
  messages: readonly Message[],
  options: EmergencyPruneOptions,
): EmergencyPruneSelection {
  const protectedTools = new Set(options.protectedTools ?? []);
  const candidates: Candidate[] = [];
  let order = 0;
  for (const message of messages) {
    for (const part of message.parts) {
      if (part.type !== 'tool') continue;
      const saved = pruneSaving(part);
      if (saved <= 0) continue;
      candidates.push({
        part: {
          messageId: message.id,
          seq: message.seq,
          callId: part.callId,
          tool: part.tool,
          outputTokens: part.outputTokens,
        },
        saved,
        protected: protectedTools.has(part.tool),
        order: order++,
      });
    }
  }
  candidates.sort(
    (a, b) => Number(a.protected) - Number(b.protected) || b.saved - a.saved || a.order - b.order,
  );

  const tokensBefore = storedTokens(messages);
  const limit = options.limitTokens ?? options.targetTokens;
  const goal = Math.min(options.targetTokens, limit);
  const floor = candidates.reduce((rest, candidate) => rest - candidate.saved, tokensBefore);
  // Clear down to the goal when that is possible; otherwise only what fitting the limit needs.
  const stopAt = floor <= goal ? goal : limit;
  const parts: PrunablePart[] = [];
  let tokens = tokensBefore;
  for (const candidate of candidates) {
    if (tokens <= stopAt) break;
    parts.push(candidate.part);
    tokens -= candidate.saved;
  }
  return {
    parts,
    savedTokens: tokensBefore - tokens,
    tokensBefore,
    tokensAfter: tokens,
    fits: tokens <= limit,
  };
}

/**
 * The most the kept part of an emergency compaction may take so the next request fits: the
 * usable input, minus the pinned system messages, minus the largest summary the summarizer may
 * write (`summarizer.maxOutputTokens`). `null` for an unlimited window (anything fits).
 */
export function emergencyRoomTokens(
  model: ModelInfo,
  policy: Pick<Policy, 'trigger' | 'summarizer'>,
  pinnedTokens: number,
): number | null {
  const usable = usableTokens(model, policy);
  if (usable === null) return null;
  return Math.max(0, usable - pinnedTokens - policy.summarizer.maxOutputTokens);
}
