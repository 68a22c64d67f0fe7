import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompactorApiError, CompactorClient, type SessionEventMessage } from '@compactor/client';
import { followEvents } from './follow-events';

const event = (type: string, data: Record<string, unknown>) => ({
  type,
  sessionId: 's1',
  compactionId: type.startsWith('compaction.') ? 'cmp_1' : null,
  at: '2026-01-05T10:02:07.800Z',
  data,
});

/** The open streams, the order things happened in, and how many times `s1` was asked for. */
const streams: http.ServerResponse[] = [];
const log: string[] = [];
let connects = 0;
let subscribeDelayMs = 0;

const server = http.createServer((req, res) => {
  if (req.url === '/v1/sessions/s1/events' && connects++ === 0) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(': keepalive\n\n');
    streams.push(res);
    req.on('close', () => log.push('closed'));
    setTimeout(() => {
      log.push('subscribed');
      res.write(': connected\n\n');
    }, subscribeDelayMs);
    return;
  }
  // An unknown session, and `s1` once deleted: what a reconnect finds.
  res
    .writeHead(404, { 'content-type': 'application/json' })
    .end(JSON.stringify({ error: { code: 'not_found', message: 'session not found' } }));
});
let client: CompactorClient;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  client = new CompactorClient({
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    apiKey: 'k',
    retry: { maxRetries: 0, baseDelayMs: 10 },
  });
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('followEvents', () => {
  it('resolves once subscribed, hands over each event, stops on close', async () => {
    subscribeDelayMs = 100;
    const seen: SessionEventMessage[] = [];
    const followed = await followEvents(client, 's1', (e) => seen.push(e));
    log.push('resolved');
    expect(log).toEqual(['subscribed', 'resolved']);

    const stream = streams[0]!;
    const pruned = event('prune.completed', { jobId: 'j1', parts: 3, tokens: 900 });
    const done = event('compaction.completed', {
      tokensBefore: 9_000,
      tokensAfter: 2_000,
      messagesBefore: 40,
      messagesAfter: 8,
      boundarySeq: 33,
      fallback: null,
    });
    stream.write(`event: prune.completed\ndata: ${JSON.stringify(pruned)}\n\n`);
    stream.write('event: x\ndata: not json\n\n');
    stream.write(`event: compaction.completed\ndata: ${JSON.stringify(done)}\n\n`);
    await expect.poll(() => seen.length).toBe(2);
    expect(seen).toEqual([pruned, done]);

    followed.close();
    expect(await followed.ended).toBeNull();
    await expect.poll(() => log.at(-1)).toBe('closed');
  });

  it('rejects when the stream cannot be opened', async () => {
    const error = await followEvents(client, 'missing', () => undefined).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompactorApiError);
    expect(error).toMatchObject({ status: 404, code: 'not_found' });
  });

  it('says why it ended when the server ends the stream and the session is gone', async () => {
    connects = 0;
    subscribeDelayMs = 0;
    const followed = await followEvents(client, 's1', () => undefined);
    streams.at(-1)!.end();
    expect(await followed.ended).toMatchObject({ status: 404, code: 'not_found' });
    expect(connects).toBe(2);
  });
});
