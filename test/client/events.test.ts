/**
 * `client.events()` over the real API with in-process workers and the LLM stub: the iterator sees
 * a compaction go through the queue, and comes back after the server drops the connection.
 */
import { describe, expect, it } from 'vitest';
import type { SessionEventMessage } from '@compactor/contract';
import { useLiveApi } from './live-api';

const live = useLiveApi({ workers: true });

/** A long-enough coding session: user asks, assistant reads files (large outputs), answers. */
function turns(count: number) {
  return Array.from({ length: count }, (_, i) => [
    { role: 'user' as const, parts: [{ type: 'text' as const, text: `Step ${i}: look at module ${i}` }] },
    {
      role: 'assistant' as const,
      finish: 'stop' as const,
      parts: [
        {
          type: 'tool' as const,
          callId: `call_${i}`,
          tool: 'read',
          status: 'completed' as const,
          input: { path: `src/module-${i}.ts` },
          output: `export const value${i} = ${i};\n`.repeat(200),
        },
        { type: 'text' as const, text: `Module ${i} exports value${i}.` },
      ],
    },
  ]).flat();
}

/** Collects events until `until` says stop; resolves `opened` once the API confirmed the subscription. */
function follow(id: string, until: (event: SessionEventMessage) => boolean, onOpen?: () => void) {
  const seen: SessionEventMessage[] = [];
  let opened!: () => void;
  const isOpen = new Promise<void>((resolve) => (opened = resolve));
  const done = (async () => {
    for await (const event of live.client().events(id, {
      onOpen: () => {
        opened();
        onOpen?.();
      },
    })) {
      seen.push(event);
      if (until(event)) break;
    }
    return seen;
  })();
  return { isOpen, done };
}

describe('client.events()', () => {
  it("yields a compaction's events, in order, as the workers run it", async () => {
    const client = live.client();
    // No automatic work: the only events are the compaction this test asks for.
    await client.createSession({
      id: 'ev-1',
      model: { id: 'gpt-4o' },
      policy: { auto: false, prune: false },
    });
    await client.appendMessages('ev-1', turns(6));
    const { isOpen, done } = follow('ev-1', (event) => event.type === 'session.compacted');
    await isOpen;

    const { compaction } = await client.requestCompaction('ev-1', { keepRecentTokens: 500 });
    const seen = await done;

    const types = seen.map((event) => event.type);
    expect(types[0]).toBe('compaction.requested');
    expect(types).toContain('compaction.started');
    expect(types).toContain('compaction.step');
    expect(types.indexOf('compaction.completed')).toBeGreaterThan(types.indexOf('compaction.started'));
    expect(types.at(-1)).toBe('session.compacted');
    for (const event of seen) expect(event).toMatchObject({ sessionId: 'ev-1', compactionId: compaction.id });
    const record = await client.getCompaction(compaction.id);
    expect(record.status).toBe('completed');
    // The iterator yields the contract's union: narrowed on `type`, each payload reads without a cast.
    expect(seen.flatMap((event) => (event.type === 'compaction.step' ? [event.data.step] : []))).toEqual(
      expect.arrayContaining(['summarize', 'finalize']),
    );
    const compacted = seen.at(-1);
    if (compacted?.type !== 'session.compacted')
      throw new Error('the stream did not end with session.compacted');
    expect(compacted.data).toMatchObject({
      tokensBefore: record.tokensBefore,
      tokensAfter: record.tokensAfter,
      boundarySeq: record.boundarySeq,
      fallback: null,
    });
  });

  it('reverts a completed compaction: the view before it again, and compaction.reverted', async () => {
    const client = live.client();
    await client.createSession({
      id: 'ev-4',
      model: { id: 'gpt-4o' },
      policy: { auto: false, prune: false },
    });
    await client.appendMessages('ev-4', turns(6));
    const before = await client.getContext('ev-4');
    const compacted = follow('ev-4', (event) => event.type === 'session.compacted');
    await compacted.isOpen;
    const { compaction } = await client.requestCompaction('ev-4', { keepRecentTokens: 500 });
    await compacted.done;

    const reverted = follow('ev-4', (event) => event.type === 'compaction.reverted');
    await reverted.isOpen;
    const answer = await client.revertCompaction(compaction.id);
    expect(answer.compaction).toMatchObject({ id: compaction.id, status: 'reverted' });
    expect((await client.getContext('ev-4')).messages).toEqual(before.messages);
    expect(await reverted.done).toEqual([
      {
        type: 'compaction.reverted',
        sessionId: 'ev-4',
        compactionId: compaction.id,
        at: expect.any(String),
        data: {
          restoredCompactionId: null,
          tokens: answer.status.tokens,
          contextMessages: before.messages.length,
        },
      },
    ]);
  });

  it('reconnects when the server drops the stream, and goes on delivering', async () => {
    const client = live.client({ retry: { baseDelayMs: 20 } });
    // No finished turn, so no prune job of its own: the only event is the one asked for below.
    await client.createSession({ id: 'ev-2', model: { id: 'gpt-4o' }, policy: { auto: false } });
    await client.appendMessages('ev-2', [{ role: 'user', parts: [{ type: 'text', text: 'hello' }] }]);
    let opens = 0;
    let reopened!: () => void;
    const isReopened = new Promise<void>((resolve) => (reopened = resolve));
    const { isOpen, done } = follow(
      'ev-2',
      (event) => event.type === 'prune.completed',
      () => {
        opens += 1;
        if (opens === 2) reopened();
      },
    );
    await isOpen;
    // Every open socket goes, the event stream's included (a deploy, a proxy's idle timeout).
    live.api.app.server.closeAllConnections();
    await isReopened;
    await client.prune('ev-2');
    const seen = await done;
    expect(seen.map((event) => event.type)).toEqual(['prune.completed']);
    expect(opens).toBe(2);
  });

  it('ends after session.deleted, the last event of a deleted session, instead of reconnecting', async () => {
    const client = live.client({ retry: { baseDelayMs: 20 } });
    await client.createSession({ id: 'ev-3', model: { id: 'gpt-4o' }, policy: { auto: false } });
    const { isOpen, done } = follow('ev-3', () => false);
    await isOpen;
    await client.deleteSession('ev-3');
    const seen = await done;
    expect(seen).toEqual([
      { type: 'session.deleted', sessionId: 'ev-3', compactionId: null, at: expect.any(String), data: {} },
    ]);
  });
});
