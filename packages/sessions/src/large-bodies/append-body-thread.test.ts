import { afterAll, describe, expect, it } from 'vitest';
import { prepareMessages, serializeBatch } from '@compactor/db';
import { getTokenizer } from '@compactor/tokenizer';
import { AppendBodyThread } from './append-body-thread';

const thread = new AppendBodyThread();
afterAll(() => thread.close());

const now = new Date('2026-01-05T10:00:00.000Z');
const messages = [
  {
    id: 'u',
    role: 'user' as const,
    parts: [{ type: 'text' as const, text: 'run the tests ✓ '.repeat(500) }],
  },
  {
    id: 'a',
    role: 'assistant' as const,
    parts: [
      {
        type: 'tool' as const,
        callId: 'c1',
        tool: 'bash',
        status: 'completed' as const,
        input: { z: 1, a: 2 },
        output: 'FAIL src/app.ts\n'.repeat(300),
      },
    ],
    finish: 'stop' as const,
    usage: { input: 1200, output: 40, reasoning: 0, cacheRead: 300, cacheWrite: 0 },
  },
];
/** A body split into segments as the reader leaves it, each in its own memory. */
const segments = (text: string) => {
  const bytes = Buffer.from(text);
  const cut = Math.floor(bytes.length / 2);
  return [Uint8Array.from(bytes.subarray(0, cut)), Uint8Array.from(bytes.subarray(cut))];
};

describe('AppendBodyThread', () => {
  it('prepares the rows the event loop would, moving the segments and handing the body back whole', async () => {
    const body = JSON.stringify({ messages });
    const sent = segments(body);
    const { bytes, outcome } = await thread.prepare(sent, 'o200k_base', now);
    // Moved, not copied: the caller's views are empty now.
    expect(sent.map((segment) => segment.byteLength)).toEqual([0, 0]);
    expect(Buffer.from(bytes).toString()).toBe(body);

    const expected = serializeBatch(await prepareMessages(messages, getTokenizer('o200k_base'), now))!;
    expect(outcome).toEqual({
      kind: 'serialized',
      batch: {
        messageIds: expected.messageIds,
        callIds: expected.callIds,
        rows: {
          messages: new Uint8Array(expected.rows.messages),
          parts: new Uint8Array(expected.rows.parts),
        },
      },
      turnEnds: [false, true],
      // What the append checks against the session's window before it writes anything.
      usagePeaks: { prompt: { index: 1, tokens: 1500 }, output: { index: 1, tokens: 40 } },
    });
  });

  it('answers what the parser and the schema refuse, and a batch only the transaction can decide', async () => {
    expect((await thread.prepare(segments('{"messages": ['), 'o200k_base', now)).outcome).toEqual({
      kind: 'invalid-json',
    });
    expect(
      (await thread.prepare(segments('{"messages":[],"__proto__":{}}'), 'o200k_base', now)).outcome.kind,
    ).toBe('invalid-json');
    const invalid = await thread.prepare(
      segments('{"messages":[{"role":"robot","parts":[]}]}'),
      'o200k_base',
      now,
    );
    expect(invalid.outcome).toMatchObject({ kind: 'invalid', issues: [{ path: ['messages', 0, 'role'] }] });
    // The same call posted unfinished, then with its result, in one batch.
    const call = { type: 'tool', callId: 'c', tool: 't', status: 'pending' };
    const twice = JSON.stringify({
      messages: [
        { role: 'assistant', parts: [call] },
        { role: 'assistant', parts: [{ ...call, status: 'completed', output: 'ok' }] },
      ],
    });
    expect((await thread.prepare(segments(twice), 'o200k_base', now)).outcome).toEqual({
      kind: 'undecidable',
    });
  });

  it('refuses bodies once closed', async () => {
    const closing = new AppendBodyThread();
    await closing.close();
    await expect(closing.prepare(segments('{}'), 'o200k_base', now)).rejects.toThrow('closed');
  });
});
