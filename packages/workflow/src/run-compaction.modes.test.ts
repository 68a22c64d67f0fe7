import { describe, expect, it } from 'vitest';
import { storedTokens, toOpenAIMessages, validateContext } from '@compactor/core';
import type { MessageInput } from '@compactor/db';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { textOf, useWorkflow } from './test-support/workflow';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';

const w = useWorkflow();

describe('topic mode (docs/PRESETS.md, `topic`)', () => {
  it('cuts where the detector saw the topic change and summarises what came before', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 6 }), {
      policy: { strategy: 'topic' },
    });
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });

    expect(result.status).toBe('completed');
    const row = result.compaction!;
    expect(row.details).toMatchObject({ writtenBy: 'llm' });
    expect(['truncate-only', 'summarize']).toContain((row.details as { topicCase: string }).topicCase);
    // The detector's request and the summarizer's, as analytics' llm_calls counts them.
    expect(row.details).toMatchObject({ calls: 2 });
    const after = await w.context(session.pk);
    const firstKept = after.messages.find((m) => !m.summary);
    expect(firstKept).toMatchObject({ role: 'user', seq: row.boundarySeq });
    expect(textOf(after.messages[1])).toContain('JavaScript heap out of memory');
    expect(validateContext(toOpenAIMessages(after))).toEqual([]);
  });

  it('with the topic preset, writes the detector summary as a system message', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 6 }), { policy: { preset: 'topic' } });
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(result.status).toBe('completed');
    const after = await w.context(session.pk);
    // The stub's detector sees "Actually, …" (confidence 0.6) before the verbatim window.
    expect(result.compaction!.details).toMatchObject({
      topicCase: 'summarize',
      writtenBy: 'detector',
      calls: 1,
    });
    expect(result.compaction!.usageInput).toBeGreaterThan(0);
    // The detector may write the preset's 500-token summary and still close its JSON.
    expect(w.stub.requests.at(-1)?.maxTokens).toBe(500 + 256);
    const summary = after.messages.find((m) => m.summary);
    expect(summary).toMatchObject({ role: 'system' });
    expect(textOf(summary)).toMatch(/^\[History Summary - \d+ earlier messages\]/);
    expect(after.messages.find((m) => !m.summary)?.role).toBe('user');
  });
});

/** A coding session whose current turn holds one huge tool output. */
function sessionWithGiantOutput(chars: number, callId = 'giant'): MessageInput[] {
  return [
    ...generateCodingSession({ turns: 1, withUsage: false }),
    { role: 'user', parts: [{ type: 'text', text: 'Dump the whole production log, please.' }] },
    {
      role: 'assistant',
      finish: 'tool-calls',
      parts: [
        {
          type: 'tool',
          callId,
          tool: 'bash',
          status: 'completed',
          input: { command: 'cat prod.log' },
          output: 'GET /api/invoices 200 12ms\n'.repeat(Math.ceil(chars / 27)),
        },
      ],
    },
  ];
}

/** The session's usable input as its status reports it, and the context view's size. */
async function fitOf(sessionPk: number) {
  const after = await w.context(sessionPk);
  return { after, tokens: storedTokens(after.messages) };
}

describe('the fit guarantee: the context fits after every compaction, whatever one message holds', () => {
  // 16,000 window, unknown model: usable 16,000 − min(4096, 32,000, 4000) = 12,000.
  const usable = 12_000;

  it.each(['overflow', 'auto', 'manual'] as const)(
    'a giant output in the current turn is shown as an excerpt (%s)',
    async (reason) => {
      const session = await w.seedSession(sessionWithGiantOutput(80_000), { contextWindow: 16_000 });
      const { compaction } = await requestCompaction(w.resources.db, session, { reason });
      const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });

      expect(result.status).toBe('completed');
      const row = result.compaction!;
      expect(row.details).toMatchObject({ clamped: { parts: 1 } });
      expect(row.tokensAfter).toBeLessThanOrEqual(usable);
      expect(row.tokensAfter).toBeLessThan(row.tokensBefore!);
      const { after, tokens } = await fitOf(session.pk);
      expect(tokens).toBe(row.tokensAfter);
      const giant = after.messages
        .flatMap((m) => m.parts)
        .find((p) => p.type === 'tool' && p.callId === 'giant');
      const output = giant?.type === 'tool' ? (giant.output ?? '') : '';
      // Head, marker with the original size and the call id, tail.
      expect(output).toMatch(/^GET \/api\/invoices 200 12ms\n/);
      expect(output).toMatch(
        /\[\.\.\. tool output clamped to fit the context window: [\d,]+ of [\d,]+ characters, [\d,]+ tokens left out; call giant\]/,
      );
      expect(output).toMatch(/GET \/api\/invoices 200 12ms\n$/);
      expect(validateContext(toOpenAIMessages(after))).toEqual([]);
      // Nothing is lost: the raw history keeps every byte.
      const raw = await w.rawPart(session.pk, 'giant');
      expect(raw?.output?.length).toBeGreaterThanOrEqual(80_000);
    },
  );

  it('a user message larger than the window is clamped, not failed', async () => {
    const session = await w.seedSession(
      [
        ...generateCodingSession({ turns: 1, withUsage: false }),
        {
          role: 'user',
          parts: [
            {
              type: 'text',
              text: 'please review this:\n'.concat('lorem ipsum dolor sit amet\n'.repeat(4000)),
            },
          ],
        },
      ],
      { contextWindow: 16_000 },
    );
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'overflow' });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(result.status).toBe('completed');
    expect(result.compaction!.tokensAfter).toBeLessThanOrEqual(usable);
    const { after } = await fitOf(session.pk);
    const newest = after.messages.at(-1)!;
    expect(textOf(newest)).toMatch(/^please review this:\nlorem ipsum/);
    expect(textOf(newest)).toMatch(
      /\[\.\.\. text clamped to fit the context window: [\d,]+ of [\d,]+ characters/,
    );
  });

  it.each([false, true])(
    'with no cut to make, it clamps alone and carries the previous summary over (system prompt: %s)',
    async (withSystem) => {
      const system: MessageInput[] = withSystem
        ? [{ role: 'system', parts: [{ type: 'text', text: 'You are careful.' }] }]
        : [];
      const session = await w.seedSession([...system, ...sessionWithGiantOutput(20_000)], {
        contextWindow: 16_000,
      });
      const first = await requestCompaction(w.resources.db, session, { reason: 'manual' });
      expect((await runCompaction(w.resources, first.compaction.id, { lastAttempt: true })).status).toBe(
        'completed',
      );
      const summaryBefore = (await fitOf(session.pk)).after.messages.find(
        (m) => m.summary && m.role === 'assistant',
      );
      await w.append(session, sessionWithGiantOutput(80_000, 'giant-2').slice(-2));
      // Asked to keep everything: no cut, but the session is over its window.
      const { compaction } = await requestCompaction(w.resources.db, session, {
        reason: 'manual',
        keepRecentTokens: 1_000_000,
      });
      const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
      expect(result.status).toBe('completed');
      expect(result.compaction!.tokensAfter).toBeLessThanOrEqual(usable);
      const { after } = await fitOf(session.pk);
      const summaryAfter = after.messages.find((m) => m.summary && m.role === 'assistant');
      expect(result.compaction!.details).toMatchObject({ clampOnly: true, writtenBy: 'previous-summary' });
      expect(textOf(summaryAfter)).toBe(textOf(summaryBefore));
      expect(validateContext(toOpenAIMessages(after))).toEqual([]);
    },
  );

  it('never completes a compaction that would leave the context larger than it found it', async () => {
    // Two short messages: any summary of the first is longer than the message it replaces.
    const session = await w.seedSession(
      [
        { role: 'user', parts: [{ type: 'text', text: 'hi' }] },
        { role: 'assistant', finish: 'stop', parts: [{ type: 'text', text: 'Hello! How can I help?' }] },
      ],
      { contextWindow: 16_000 },
    );
    const { compaction } = await requestCompaction(w.resources.db, session, {
      reason: 'manual',
      keepRecentTokens: 1,
    });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(result.status).toBe('skipped');
    expect(result.compaction!.errorMessage).toMatch(/would not shrink the context \(\d+ → \d+ tokens\)/);
    expect((await fitOf(session.pk)).after.messages.some((m) => m.summary)).toBe(false);
  });

  it('when the kept turns cannot fit even clamped, the boundary moves forward and the summary counts them', async () => {
    // The topic preset keeps two exchanges verbatim; here they hold 120 tool calls: on a 4k model even
    // every output at its marker leaves them over the window.
    const busyTurn = (n: number): MessageInput[] => [
      { role: 'user', parts: [{ type: 'text', text: `Step ${n}: check every directory.` }] },
      ...Array.from({ length: 60 }, (_, i) => ({
        role: 'assistant' as const,
        finish: 'tool-calls' as const,
        parts: [
          {
            type: 'tool' as const,
            callId: `ls-${n}-${i}`,
            tool: 'bash',
            status: 'completed' as const,
            input: { command: `ls -la packages/module-${i}` },
            output: `total ${i}\n${'-rw-r--r-- 1 dev dev 4096 index.ts\n'.repeat(12)}`,
          },
        ],
      })),
    ];
    const session = await w.seedSession(
      [
        { role: 'user', parts: [{ type: 'text', text: 'Audit the repository layout.' }] },
        ...busyTurn(1),
        ...busyTurn(2),
      ],
      { contextWindow: 4096, policy: { preset: 'topic' } },
    );
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'overflow' });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(result.status).toBe('completed');
    expect(result.compaction!.details).toMatchObject({ keptMessagesTruncated: expect.any(Number) });
    const { after, tokens } = await fitOf(session.pk);
    expect(tokens).toBeLessThanOrEqual(3072);
    expect(textOf(after.messages.find((m) => m.summary))).toMatch(/\[Compacted \d+ messages/);
    expect(validateContext(toOpenAIMessages(after))).toEqual([]);
  });

  it('fails with context_cannot_fit only when the pinned system messages alone exceed the window', async () => {
    const session = await w.seedSession(
      [
        { role: 'system', parts: [{ type: 'text', text: 'You are careful.\n'.repeat(4_000) }] },
        ...generateCodingSession({ turns: 2, withUsage: false }),
      ],
      { contextWindow: 16_000 },
    );
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'overflow' });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(result.compaction).toMatchObject({ status: 'failed', errorCode: 'context_cannot_fit' });
    expect(result.compaction!.errorMessage).toMatch(
      /the pinned system messages alone take \d{5} tokens; the model accepts 12000/,
    );
  });

  it('a large system prompt that fits leaves the rest of the window to the compaction', async () => {
    const session = await w.seedSession(
      [
        { role: 'system', parts: [{ type: 'text', text: 'You are careful.\n'.repeat(1_500) }] },
        ...sessionWithGiantOutput(40_000),
      ],
      { contextWindow: 16_000 },
    );
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'overflow' });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(result.status).toBe('completed');
    expect(result.compaction!.tokensAfter).toBeLessThanOrEqual(usable);
  });
});

describe('pinned system messages', () => {
  it('keeps the stored system prompt first, never summarised', async () => {
    const session = await w.seedSession([
      { role: 'system', parts: [{ type: 'text', text: 'You are a careful engineer. NEVER push to main.' }] },
      ...generateCodingSession({ turns: 3 }),
    ]);
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'manual' });
    expect((await runCompaction(w.resources, compaction.id, { lastAttempt: true })).status).toBe('completed');
    const after = await w.context(session.pk);
    expect(after.messages[0]).toMatchObject({ role: 'system', summary: false });
    expect(textOf(after.messages[0])).toContain('NEVER push to main');
    expect(after.messages[1]?.summary).toBe(true);
    const openai = toOpenAIMessages(after);
    expect(openai[0]).toEqual({ role: 'system', content: 'You are a careful engineer. NEVER push to main.' });
    expect(validateContext(openai)).toEqual([]);
  });
});
