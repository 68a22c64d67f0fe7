/**
 * Prune selection over 100,000 tool parts (`npm run bench -- core-prune`).
 *
 * `selectPrunableParts` sums the stored `outputTokens`. Baselines, in the same process and on the
 * same session: OpenCode's own loop, which re-estimates every output from its text
 * (`length / 4`), and the same loop re-tokenizing every output with an exact tokenizer (what
 * "never re-tokenize history" avoids). The worst case is a session never pruned (every part is
 * walked and 93 % are selected); the steady state, after regular prunes, stops at the first
 * output pruned before. Budget: a median well under 50 ms. The service prunes in SQL now (the
 * scale benchmark times that); this function is the reference the SQL is tested against, and its
 * p95 over 50 runs is the garbage collector's (93,000 result objects a run), so it is printed,
 * not budgeted.
 */
import { countTokens } from 'gpt-tokenizer';
import {
  DEFAULT_POLICY,
  estimateTokens,
  selectPrunableParts,
  type Message,
  type PruningPolicy,
  type ToolPart,
} from '@compactor/core';
import { toolPart } from '@compactor/core/testing';
import { lcg, measure, storedMessage, timingRow } from './harness';

const PARTS = 100_000;
const PARTS_PER_MESSAGE = 4;
const BUDGET_MS = 50;

function buildSession(): Message[] {
  const random = lcg(42);
  const corpus = 'const value = compute(input); // refactor the parser and run the tests again\n'.repeat(40);
  const messages: Message[] = [];
  let seq = 0;
  for (let made = 0; made < PARTS; made += PARTS_PER_MESSAGE) {
    messages.push(storedMessage(++seq, 'user', [{ type: 'text', text: 'next step', tokens: 3 }]));
    const parts: ToolPart[] = [];
    for (let i = 0; i < PARTS_PER_MESSAGE; i++) {
      const output = corpus.slice(0, 40 + Math.floor(random() * 400));
      const outputTokens = countTokens(output);
      parts.push(
        toolPart(random() < 0.05 ? 'skill' : 'read', outputTokens, {
          callId: `call_${seq + 1}_${i}`,
          input: { path: `src/file${i}.ts` },
          output,
          tokens: outputTokens + 12,
        }),
      );
    }
    messages.push(storedMessage(++seq, 'assistant', parts));
  }
  return messages;
}

/** OpenCode's `prune` loop as written, sizing each output with `size` instead of the stored count. */
function reestimatingPrune(
  messages: readonly Message[],
  pruning: PruningPolicy,
  size: (text: string) => number,
): number {
  let total = 0;
  let pruned = 0;
  let turns = 0;
  loop: for (let m = messages.length - 1; m >= 0; m--) {
    const message = messages[m]!;
    if (message.role === 'user') turns++;
    if (turns < pruning.protectUserTurns) continue;
    if (message.summary) break;
    for (let p = message.parts.length - 1; p >= 0; p--) {
      const part = message.parts[p]!;
      if (part.type !== 'tool' || part.status !== 'completed' || pruning.protectedTools.includes(part.tool))
        continue;
      if (part.compactedAt !== null) break loop;
      const estimate = size(part.output ?? '');
      total += estimate;
      if (total > pruning.protectTokens) pruned += estimate;
    }
  }
  return pruned > pruning.minimumTokens ? pruned : 0;
}

const session = buildSession();
const pruning = DEFAULT_POLICY.pruning;
// Steady state: earlier prunes already marked everything but the newest 2,000 outputs.
const steady = session.map((m, index) =>
  index >= session.length - 1000 || m.role !== 'assistant'
    ? m
    : storedMessage(
        m.seq,
        m.role,
        m.parts.map((part) =>
          part.type === 'tool' ? { ...part, compactedAt: '2025-01-01T00:00:00Z' } : part,
        ),
      ),
);
const selection = selectPrunableParts(session, pruning);
console.log(
  `session: ${session.length} messages, ${PARTS} tool parts; selected ${selection.parts.length} parts, ${selection.prunedTokens} tokens`,
);

const stored = measure(50, () => selectPrunableParts(session, pruning));
const steadyState = measure(200, () => selectPrunableParts(steady, pruning));
const estimated = measure(50, () => reestimatingPrune(session, pruning, estimateTokens));
const tokenized = measure(3, () => reestimatingPrune(session, pruning, countTokens));

const row = (name: string, r: typeof stored): string => timingRow(name, r, 9);
console.log(row('selectPrunableParts, never pruned (worst case)', stored));
console.log(row('selectPrunableParts, steady state', steadyState));
console.log(row('OpenCode loop, re-estimating length / 4', estimated));
console.log(row('OpenCode loop, re-tokenizing (gpt-tokenizer)', tokenized));
console.log(`re-tokenizing / stored counts: ${(tokenized.median / stored.median).toFixed(0)}x`);
console.log(`budget ${BUDGET_MS} ms (median): ${stored.median < BUDGET_MS ? 'ok' : 'EXCEEDED'}`);
if (stored.median >= BUDGET_MS) process.exit(1);
