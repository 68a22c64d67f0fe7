import { describe, expect, it } from 'vitest';
import { toOpenAIMessages, validateContext } from '@compactor/core';
import type { MessageInput } from '@compactor/db';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { textOf, useWorkflow } from './test-support/workflow';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';

const w = useWorkflow();

describe('topic mode (seed 002)', () => {
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
    expect(result.compaction!.details).toMatchObject({ topicCase: 'summarize', writtenBy: 'detector' });
    const summary = after.messages.find((m) => m.summary);
    expect(summary).toMatchObject({ role: 'system' });
    expect(textOf(summary)).toMatch(/^\[History Summary - \d+ earlier messages\]/);
    expect(after.messages.find((m) => !m.summary)?.role).toBe('user');
  });
});

/** A coding session whose current turn holds one huge tool output. */
function sessionWithGiantOutput(chars: number): MessageInput[] {
  return [
    ...generateCodingSession({ turns: 1, withUsage: false }),
    { role: 'user', parts: [{ type: 'text', text: 'Dump the whole production log, please.' }] },
    {
      role: 'assistant',
      finish: 'tool-calls',
      parts: [
        {
          type: 'tool',
          callId: 'giant',
          tool: 'bash',
          status: 'completed',
          input: { command: 'cat prod.log' },
          output: 'GET /api/invoices 200 12ms\n'.repeat(Math.ceil(chars / 27)),
        },
      ],
    },
  ];
}

describe('emergency (overflow) compaction', () => {
  it('clears a giant output in the current turn so the context fits, instead of looping', async () => {
    const session = await w.seedSession(sessionWithGiantOutput(80_000), { contextWindow: 16_000 });
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'overflow' });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });

    expect(result.status).toBe('completed');
    const row = result.compaction!;
    expect(row.details).toMatchObject({ emergencyPruned: { parts: 1 } });
    expect(row.tokensAfter).toBeLessThan(12_000);
    const after = await w.context(session.pk);
    const giant = after.messages
      .flatMap((m) => m.parts)
      .find((p) => p.type === 'tool' && p.callId === 'giant');
    expect(giant).toMatchObject({ output: '[Old tool result content cleared]' });
  });

  it('fails with context_cannot_fit when even the newest user message does not fit', async () => {
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
    expect(result.status).toBe('failed');
    expect(result.compaction).toMatchObject({ errorCode: 'context_cannot_fit' });
    expect(result.compaction!.errorMessage).toMatch(/has room for \d+ \(usable input \d+, minus 0 of pinned/);
  });

  it('names the pinned system messages when they leave no room', async () => {
    const session = await w.seedSession(
      [
        { role: 'system', parts: [{ type: 'text', text: 'You are careful.\n'.repeat(2_500) }] },
        ...generateCodingSession({ turns: 2, withUsage: false }),
      ],
      { contextWindow: 16_000 },
    );
    const { compaction } = await requestCompaction(w.resources.db, session, { reason: 'overflow' });
    const result = await runCompaction(w.resources, compaction.id, { lastAttempt: true });
    expect(result.compaction).toMatchObject({ status: 'failed', errorCode: 'context_cannot_fit' });
    expect(result.compaction!.errorMessage).toMatch(
      /has room for 0 \(usable input \d+, minus \d{4,} of pinned system messages/,
    );
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
