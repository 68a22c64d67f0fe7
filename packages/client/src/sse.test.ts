import { describe, expect, it } from 'vitest';
import { readSse } from './sse.js';

/** A body that arrives in the given chunks. */
function body(...chunks: string[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
}

async function all(stream: ReadableStream<Uint8Array>, comments: string[] = []) {
  const blocks = [];
  for await (const block of readSse(stream, { onComment: (text) => comments.push(text) })) blocks.push(block);
  return blocks;
}

describe('readSse', () => {
  it('splits blocks across chunks, joins data lines, keeps ids, reports comments', async () => {
    const comments: string[] = [];
    const blocks = await all(
      body(': connected\n\nevent: a\nda', 'ta: {"x":1}\ndata: 2\nid: 7\n\n: keepalive\n\ndata:plain\n\n'),
      comments,
    );
    expect(comments).toEqual(['connected', 'keepalive']);
    expect(blocks).toEqual([
      { event: 'a', data: '{"x":1}\n2', id: '7', retry: null },
      { event: 'message', data: 'plain', id: '7', retry: null },
    ]);
  });

  it('accepts CRLF and CR line ends, even split between chunks, and reads retry', async () => {
    const blocks = await all(body('event: b\r', '\ndata: 1\r\nretry: 3000\r\r\n'));
    expect(blocks).toEqual([{ event: 'b', data: '1', id: null, retry: 3000 }]);
  });

  it('ends a line on a CR that is the last byte of the stream', async () => {
    expect(await all(body('data: a\r', '\r'))).toEqual([
      { event: 'message', data: 'a', id: null, retry: null },
    ]);
  });

  it('applies retry at once and an id when its block ends, with or without data', async () => {
    const seen: string[] = [];
    const blocks = [];
    for await (const block of readSse(body('retry: 5000\n\nid: 9\n\ndata: x\n\n'), {
      onRetry: (ms) => seen.push(`retry ${ms}`),
      onId: (id) => seen.push(`id ${id}`),
    }))
      blocks.push(block);
    expect(seen).toEqual(['retry 5000', 'id 9', 'id 9']);
    expect(blocks).toEqual([{ event: 'message', data: 'x', id: '9', retry: null }]);
  });

  it('dispatches nothing for a block without data, nor for an unfinished one', async () => {
    expect(await all(body('event: empty\n\nevent: cut\ndata: 1'))).toEqual([]);
  });
});
