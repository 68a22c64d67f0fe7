import { describe, expect, it } from 'vitest';
import { appendTestMessages } from '../test-support/append-test-messages';
import { loadContextRows } from '../operations/load-messages';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { markPartsCompacted } from './parts';
import { selectViewHead, selectViewWindow } from './covered-windows';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

/** A system prompt, then 20 turns: a request and an answer that reads a file. */
async function session() {
  const row = await createTestSession(t.db);
  await appendTestMessages(t.db, row.pk, [
    newMessage('system', [text('You are a coding agent.', 6)], { id: 's0' }),
    ...Array.from({ length: 20 }, (_, i) => [
      newMessage('user', [text(`request ${i}`, 4)], { id: `u${i}` }),
      newMessage('assistant', [text(`reading ${i}`, 4), tool(`call_${i}`, `output ${i}`)], { id: `a${i}` }),
    ]).flat(),
  ]);
  return row;
}

describe('the covered view in windows', () => {
  it('pages the kept messages by seq in both directions, as the whole view holds them', async () => {
    const row = await session();
    await markPartsCompacted(t.db, row.pk, [{ seq: 3, callId: 'call_0' }], { at: new Date(), by: 'prune_1' });
    const whole = (await loadContextRows(t.db, row.pk)).messages;
    const pin = { pinSystemMessages: true };

    const forward = [];
    for (let afterSeq: number | undefined; ;) {
      const page = await selectViewWindow(t.db, row.pk, {
        ...pin,
        order: 'asc',
        limit: 7,
        ...(afterSeq ? { afterSeq } : {}),
      });
      if (page.length === 0) break;
      expect(page.length).toBeLessThanOrEqual(7);
      forward.push(...page);
      afterSeq = page.at(-1)!.seq;
    }
    // Pinned system messages come with the head, not in the windows.
    expect(forward).toEqual(whole.filter((m) => m.role !== 'system'));
    expect(await selectViewHead(t.db, row.pk, { ...pin, throughSeq: 100 })).toEqual(
      whole.filter((m) => m.role === 'system'),
    );
    // The pruned output is not read, as in the whole view.
    expect(forward.find((m) => m.seq === 3)!.parts[1]).toMatchObject({ output: null });

    const newest = await selectViewWindow(t.db, row.pk, { ...pin, order: 'desc', limit: 5, beforeSeq: 40 });
    expect(newest.map((m) => m.seq)).toEqual([35, 36, 37, 38, 39]);
    const unpinned = await selectViewWindow(t.db, row.pk, {
      pinSystemMessages: false,
      order: 'asc',
      limit: 2,
    });
    expect(unpinned.map((m) => m.role)).toEqual(['system', 'user']);
  });

  it('leaves tool outputs unread when asked to, and nothing else', async () => {
    const row = await session();
    const request = { pinSystemMessages: true, order: 'asc' as const, limit: 50 };
    const full = await selectViewWindow(t.db, row.pk, request);
    const lean = await selectViewWindow(t.db, row.pk, { ...request, outputs: false });
    expect(lean).toEqual(
      full.map((m) => ({
        ...m,
        parts: m.parts.map((p) => (p.type === 'tool' ? { ...p, output: null } : p)),
      })),
    );
  });
});
