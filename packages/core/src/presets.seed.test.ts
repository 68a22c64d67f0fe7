/**
 * Each preset against its seed's rules, on the reference's own numbers (shared seeds: 004 OpenCode,
 * 000 Opal, 003 klaude-code). Topic mode (002) is in topic-overlap.test.ts. docs/PRESETS.md lists
 * every rule these rows hold.
 */
import { describe, expect, it } from 'vitest';
import { continuationAfterCompaction, CONTINUATION_METADATA_TYPE } from './continuation';
import { findCutPoint, keepRecentTokensFor } from './cut-point';
import type { Message } from './model';
import { DEFAULT_POLICY, OPENCODE_CONTINUE_MESSAGE, POLICY_PRESETS, resolvePolicy } from './policy';
import { buildSummaryPrompt, OPENCODE_COMPACTION_AGENT_PROMPT, OPENCODE_SUMMARY_PROMPT } from './prompts';
import { selectPrunableParts } from './prune';
import { planCompaction } from './split-turn';
import {
  buildSummaryMessages,
  countLeadingSummaryMessages,
  extractPreviousSummary,
  OPAL_SUMMARY_PREFIX,
} from './summary-messages';
import {
  assistant,
  conversation,
  messages,
  model,
  summary,
  text,
  toolPart,
  user,
} from './test-support/builders';
import { CHARS_MEASURE, tokenMeasureFor } from './token-measure';
import { evaluateTrigger } from './triggers';

describe('opencode preset', () => {
  it('asks with the compaction-agent directive and the default summary prompt, verbatim', () => {
    const prompt = buildSummaryPrompt({
      messages: [user('fix the parser', 5)],
      style: POLICY_PRESETS.opencode.summarizer.prompt,
    });
    expect(prompt.system).toBe(OPENCODE_COMPACTION_AGENT_PROMPT);
    expect(prompt.system.startsWith('Provide a detailed but concise summary of the conversation.')).toBe(
      true,
    );
    expect(prompt.user).toContain('<conversation>\n[User]: fix the parser\n</conversation>');
    expect(prompt.user.endsWith(OPENCODE_SUMMARY_PROMPT)).toBe(true);
    expect(
      OPENCODE_SUMMARY_PROMPT.startsWith('Provide a detailed prompt for continuing our conversation above.'),
    ).toBe(true);
    // The default keeps Opal's structured prompt.
    expect(buildSummaryPrompt({ messages: [] }).system).not.toBe(OPENCODE_COMPACTION_AGENT_PROMPT);
  });

  it.each([
    // process() step 9: `if auto && result === "continue"` → "Continue if you have next steps".
    ['opencode', 'auto', OPENCODE_CONTINUE_MESSAGE],
    ['opencode', 'overflow', OPENCODE_CONTINUE_MESSAGE],
    ['opencode', 'manual', null],
    ['default', 'auto', null],
    ['opal', 'auto', null],
  ] as const)('%s after a %s compaction asks the client to append %s', (preset, reason, expected) => {
    const hint = continuationAfterCompaction(POLICY_PRESETS[preset], reason);
    expect(hint?.text ?? null).toBe(expected);
    if (hint)
      expect(hint).toEqual({ role: 'user', text: expected, metadata: { type: CONTINUATION_METADATA_TYPE } });
  });

  it('the appended "Continue if you have next steps" never re-triggers compaction (loop guard)', () => {
    // An ineffective-looking view: the summary alone is above the 80 % point of a small window.
    const policy = POLICY_PRESETS.opencode;
    const small = model(10_000, 1000);
    const compacted = conversation([user('old', 100), summary('long summary', 9500, { seq: 50 })]);
    const hint = continuationAfterCompaction(policy, 'auto')!;
    const continued = [...compacted, user(hint.text, 7, { seq: 51, metadata: hint.metadata })];
    expect(evaluateTrigger({ messages: continued, model: small, policy }).reason).toBe('just-compacted');
    // A real user message there is new history: the trigger decides on size again.
    const typed = [...compacted, user('and now the tests', 7, { seq: 51 })];
    expect(evaluateTrigger({ messages: typed, model: small, policy }).compact).toBe(true);
  });
});

describe('opal preset', () => {
  it('writes its own summary message, which it finds again by its "[Conversation summary" prefix', () => {
    const [written] = buildSummaryMessages({
      style: POLICY_PRESETS.opal.summaryMessage,
      summaryText: '## Goal\nShip the parser',
      compactionId: 'cmp_9',
      auto: true,
      messagesCompacted: 12,
      createdAt: '2025-01-01T00:00:00.000Z',
    });
    expect(written).toMatchObject({ role: 'user', summary: true });
    const body = written!.parts[0]!.type === 'text' ? written!.parts[0]!.text : '';
    expect(body.startsWith(`${OPAL_SUMMARY_PREFIX}\n\n## Goal`)).toBe(true);
    expect(OPAL_SUMMARY_PREFIX).toBe('[Conversation summary — older messages were compacted]');
    // Imported from Opal without the flag: still the previous summary (iterative update).
    const imported: Message = { ...written!, seq: 1, summary: false };
    expect(countLeadingSummaryMessages([imported, user('next', 3)])).toBe(1);
    expect(extractPreviousSummary([imported])).toBe('## Goal\nShip the parser');
  });

  it.each([
    // "Default keep_recent_tokens: 20,000" for manual; "Auto-compaction passes contextWindow / 4"; emergency window / 5.
    ['manual', 32_000, 20_000],
    ['auto', 32_000, 8000],
    ['overflow', 32_000, 6400],
    ['manual', 128_000, 20_000],
  ] as const)('%s on a %i window keeps %i', (reason, window, expected) => {
    expect(keepRecentTokensFor(reason, model(window, 4096), POLICY_PRESETS.opal)).toBe(expected);
  });

  it('the default caps manual at the auto budget instead (8,000 on 32k)', () => {
    expect(keepRecentTokensFor('manual', model(32_000, 4096), DEFAULT_POLICY)).toBe(8000);
  });

  it('cuts once the walked tokens exceed keep_recent_tokens, not when they reach it', () => {
    // `u a a a` at 100 tokens each, keep 200: 200 is reached at index 2, exceeded at index 1.
    const session = messages('uaaa', 100);
    const plan = (policy: typeof DEFAULT_POLICY) =>
      planCompaction(session, { keepRecentTokens: 200, policy });
    expect(POLICY_PRESETS.opal.keepRecent.cutWhen).toBe('exceeded');
    expect(plan(POLICY_PRESETS.opal)?.cutIndex).toBe(1);
    expect(plan(POLICY_PRESETS.klaude)?.cutIndex).toBe(2);
    expect(plan(DEFAULT_POLICY)?.cutIndex).toBe(2);
  });
});

describe('klaude preset', () => {
  it.each([
    // keep min(20000, max(4096, 35 %)), never more than window − reserve − the summary (Compactor's
    // bound, budgets.ts), reserve min(16384, max(2048, 25 %)).
    [5000, 2362], // 4096 capped at 5000 − 2048 − 590 (the summary: 20 % of the 2,952 left for the prompt)
    [20_000, 7000], // 35 % = 7000 < 20000 − 5000
    [200_000, 20_000],
  ])('a %i-token window keeps %i', (window, expected) => {
    for (const reason of ['auto', 'overflow', 'manual'] as const) {
      expect(keepRecentTokensFor(reason, model(window, 4096), POLICY_PRESETS.klaude)).toBe(expected);
    }
  });
});

describe("tokenCount: 'chars' reproduces the reference systems' estimates", () => {
  // Three old outputs of 100,000 characters (OpenCode: round(100000 / 4) = 25,000 each) that the
  // exact tokenizer counts as 15,000 each, behind two protected user turns.
  const outputs = conversation([
    user('read the logs', 3),
    assistant([toolPart('read', 15_000, { output: 'x'.repeat(100_000) })]),
    assistant([toolPart('read', 15_000, { output: 'x'.repeat(100_000) })]),
    assistant([toolPart('read', 15_000, { output: 'x'.repeat(100_000) })]),
    user('now fix it', 3),
    assistant('done', { tokens: 1 }),
    user('thanks', 1),
    assistant('ok', { tokens: 1 }),
  ]);

  it.each([
    // OpenCode's prune (docs/PRESETS.md): total > PRUNE_PROTECT (40,000) are candidates; prune only if pruned > PRUNE_MINIMUM (20,000).
    ['chars (seed): 25k protected, 2 × 25k = 50k > 20k pruned', 'chars', 2, 50_000],
    ['tokenizer: 15k + 15k protected, 15k ≤ 20k: nothing', 'tokenizer', 0, 0],
  ] as const)('OpenCode prune, %s', (_name, tokenCount, parts, saved) => {
    const policy = resolvePolicy({ preset: 'opencode', tokenCount });
    const selection = selectPrunableParts(outputs, policy.pruning, tokenMeasureFor(policy.tokenCount));
    expect(selection.parts).toHaveLength(parts);
    expect(selection.prunedTokens).toBe(saved);
  });

  // Opal: accumulate "4 chars ≈ 1 token" back from the newest message until keep_recent (window / 4
  // = 7000 on 28k) is reached, then the nearest user message at or after it. Texts of 8,000 and
  // 24,000 characters (2000 and 6000 estimated) that the tokenizer counts denser (2667 and 8000).
  const turns = conversation([
    user('u'.repeat(8000), 2667),
    assistant([text('a'.repeat(24_000), 8000)]),
    user('u'.repeat(8000), 2667),
    assistant([text('a'.repeat(24_000), 8000)]),
  ]);

  it.each([
    ['chars (seed): 6000 + 2000 reach 7000 on the user message at 2: a clean cut', 'chars', 2, 'clean'],
    [
      'tokenizer: 8000 alone reaches it inside the last turn: a split cut',
      'tokenizer',
      3,
      'prefix-in-history',
    ],
  ] as const)('Opal cut, %s', (_name, tokenCount, cutIndex, split) => {
    const policy = resolvePolicy({ preset: 'opal', tokenCount });
    const keepRecentTokens = keepRecentTokensFor('auto', model(28_000, 4096), policy);
    expect(keepRecentTokens).toBe(7000);
    expect(planCompaction(turns, { keepRecentTokens, policy })).toMatchObject({ cutIndex, split });
  });

  it('measures a message as the model is shown it: texts and tool calls, round(chars / 4)', () => {
    const call = assistant([
      text('abcd', 99),
      toolPart('read', 500, { input: { path: 'a' }, output: 'x'.repeat(40) }),
    ]);
    // 4 + "read" 4 + {"path":"a"} 12 + 40 = 60 characters → 15.
    expect(CHARS_MEASURE.message(call)).toBe(15);
    expect(
      findCutPoint(conversation([user('q', 1), call]), { keepRecentTokens: 15, measure: CHARS_MEASURE }),
    ).toMatchObject({ index: 1 });
  });

  it('is off in every preset: exact counts are the default', () => {
    for (const preset of Object.values(POLICY_PRESETS)) expect(preset.tokenCount).toBe('tokenizer');
  });
});
