/**
 * The served-context guarantee at the edges, through the real API, real workers and the LLM
 * stub, as a backend would meet them: a giant output in the newest turn, a small local model's
 * window. After every compaction the context fits `status.usable`, and nothing stays stuck.
 */
import { describe, expect, it } from 'vitest';
import { generateCodingSession, generateLongCodingSession } from '@compactor/testing/fixtures';
import type { CompactorClient } from '@compactor/client';
import { useLiveApi } from './live-api';

const live = useLiveApi({ workers: true });

/** Polls until the session has no active compaction; returns its status. */
async function settled(client: CompactorClient, id: string) {
  for (let i = 0; i < 300; i++) {
    const { status } = await client.getSession(id);
    if (status.activeCompaction === null) return status;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`session ${id} still compacting`);
}

describe('a giant output in the newest turn', () => {
  it('is clamped: the session fits again instead of staying over its window for good', async () => {
    const client = live.client();
    await client.createSession({ id: 'giant-log', model: { id: 'gpt-4o' } });
    await client.appendMessages('giant-log', generateCodingSession({ turns: 3, withUsage: false }));
    // A 700,000-character log read in the newest turn: far more than gpt-4o's 111,616 usable tokens.
    const log = 'GET /api/v1/invoices?page=2 200 12ms user=42\n'.repeat(16_000);
    const appended = await client.appendMessages('giant-log', [
      { role: 'user', parts: [{ type: 'text', text: 'Read the whole production log.' }] },
      {
        role: 'assistant',
        finish: 'tool-calls',
        parts: [
          {
            type: 'tool',
            callId: 'read-log',
            tool: 'bash',
            status: 'completed',
            input: { command: 'cat prod.log' },
            output: log,
          },
        ],
      },
    ]);
    expect(appended.status.overflow).toBe(true);
    expect(appended.status.activeCompaction).not.toBeNull();

    const status = await settled(client, 'giant-log');
    expect(status.lastCompaction).toMatchObject({ status: 'completed' });
    expect(status.lastCompaction!.tokensAfter!).toBeLessThan(status.lastCompaction!.tokensBefore!);
    expect(status.tokens).toBeLessThanOrEqual(status.usable!);
    expect(status.overflow).toBe(false);

    const context = await client.getContext('giant-log', { format: 'openai' });
    const shown = context.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'read-log');
    expect(String(shown?.content)).toContain('clamped to fit the context window');
    expect(String(shown?.content)).toContain('call read-log');
    // The raw history keeps every byte.
    const raw = await client.listMessages('giant-log', { limit: 1000 });
    const part = raw.messages
      .flatMap((m) => m.parts)
      .find((p) => p.type === 'tool' && p.callId === 'read-log');
    expect(part?.type === 'tool' ? part.output : '').toBe(log);

    // The provider's overflow report now finds nothing left to fix, and the session still fits.
    await client.reportOverflow('giant-log', {
      status: 400,
      error: 'prompt is too long: 130000 tokens > 128000 maximum',
    });
    const after = await settled(client, 'giant-log');
    expect(after.tokens).toBeLessThanOrEqual(after.usable!);
  });
});

describe('a small local model (8k window)', () => {
  it('compacts a 300-message coding session and every compaction leaves it within the window', async () => {
    const client = live.client();
    await client.createSession({
      id: 'local-8k',
      model: { id: 'qwen2.5-coder-7b', contextWindow: 8192, maxOutputTokens: 2048 },
    });
    // Without the fixture's usage: it reports the whole uncompacted history (past 80,000 tokens
    // by the end), which no turn of an 8k model can have seen, and the API refuses such reports.
    const messages = generateLongCodingSession(300, { withUsage: false });
    for (let start = 0; start < messages.length; start += 10) {
      await client.appendMessages('local-8k', messages.slice(start, start + 10));
      await settled(client, 'local-8k');
    }
    const { compactions } = await client.listCompactions('local-8k', { limit: 100 });
    const completed = compactions.filter((c) => c.status === 'completed');
    expect(completed.length).toBeGreaterThan(0);
    expect(compactions.filter((c) => c.status === 'failed')).toEqual([]);
    const status = await settled(client, 'local-8k');
    for (const c of completed) expect(c.tokensAfter!).toBeLessThanOrEqual(status.usable!);
  }, 120_000);
});
