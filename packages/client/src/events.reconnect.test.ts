/**
 * `client.events()` against a scripted local server, for what the real API cannot be made to do
 * on cue: a deploy (the stream ends, the proxy answers 502 for a while), a server that ends a
 * healthy stream with no retries left, a connection that keeps failing.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompactorClient } from './client.js';
import { CompactorApiError } from './errors.js';

type Answer = { status: 200; events: number } | { status: number; body: string };

/** What the server answers to each connection, in order; the last one repeats. */
let script: Answer[] = [];
let connections = 0;
let server: Server;
let baseUrl: string;

/** The `Last-Event-ID` each connection sent (null: none). */
let lastEventIds: Array<string | null> = [];

const event = (n: number) =>
  `id: ${n}-0\nevent: compaction.step\ndata: ${JSON.stringify({
    type: 'compaction.step',
    sessionId: 's',
    compactionId: `cmp_${n}`,
    at: '2026-01-05T10:02:07.800Z',
    data: { step: 'summarize', attempt: 1 },
  })}\n\n`;

beforeAll(async () => {
  let sent = 0;
  server = createServer((request, response) => {
    connections += 1;
    lastEventIds.push((request.headers['last-event-id'] as string | undefined) ?? null);
    request.resume();
    const next = (script.length > 1 ? script.shift() : script[0])!;
    if ('body' in next) {
      response.writeHead(next.status, { 'content-type': 'text/plain' });
      response.end(next.body);
      return;
    }
    response.writeHead(200, { 'content-type': 'text/event-stream' });
    let text = ': connected\n\n';
    for (let i = 0; i < next.events; i++) text += event(++sent);
    // Ends the stream, as a deploy or a proxy's idle timeout does.
    response.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

async function take(client: CompactorClient, count: number): Promise<string[]> {
  const ids: string[] = [];
  for await (const e of client.events('s')) {
    ids.push(e.compactionId!);
    if (ids.length === count) break;
  }
  return ids;
}

describe('client.events() through a deploy', () => {
  it('reconnects after the stream ends and the proxy answers 502 and 504 meanwhile', async () => {
    script = [
      { status: 200, events: 1 },
      { status: 502, body: 'bad gateway' },
      { status: 504, body: 'gateway timeout' },
      { status: 200, events: 1 },
    ];
    connections = 0;
    const client = new CompactorClient({ baseUrl, retry: { baseDelayMs: 5 } });
    expect(await take(client, 2)).toEqual(['cmp_1', 'cmp_2']);
    expect(connections).toBe(4);
  });

  it('sends the last event id it saw when it reconnects, so the API replays what it missed', async () => {
    script = [
      { status: 200, events: 2 },
      { status: 503, body: 'restarting' },
      { status: 200, events: 1 },
    ];
    lastEventIds = [];
    const client = new CompactorClient({ baseUrl, retry: { baseDelayMs: 5 } });
    const ids = await take(client, 3);
    const [first, second] = ids.map((id) => Number(id.replace('cmp_', '')));
    expect(lastEventIds).toEqual([null, `${second}-0`, `${second}-0`]);
    expect(second).toBe(first! + 1);
  });

  it('reconnects after a healthy stream ended even with no retries allowed', async () => {
    script = [{ status: 200, events: 1 }];
    connections = 0;
    const client = new CompactorClient({ baseUrl, retry: { maxRetries: 0, baseDelayMs: 5 } });
    expect(await take(client, 3)).toHaveLength(3);
    expect(connections).toBe(3);
  });

  it("skips an event whose data is not its type's, and goes on with the next", async () => {
    const step = (n: number, data: unknown) =>
      `id: ${n}-0\nevent: compaction.step\ndata: ${JSON.stringify({ type: 'compaction.step', sessionId: 's', compactionId: `cmp_${n}`, at: '2026-01-05T10:02:07.800Z', data })}\n\n`;
    script = [
      {
        status: 200,
        body: `: connected\n\n${step(1, { attempt: 1 })}${step(2, { step: 'prune', attempt: 1 })}`,
      },
    ];
    const client = new CompactorClient({ baseUrl, retry: { baseDelayMs: 5 } });
    const steps: string[] = [];
    for await (const e of client.events('s', { reconnect: false })) {
      steps.push(e.type === 'compaction.step' ? `${e.compactionId}:${e.data.step}` : e.type);
    }
    expect(steps).toEqual(['cmp_2:prune']);
  });

  it('gives up with the error once failed connections spend the retry budget', async () => {
    script = [{ status: 502, body: 'bad gateway' }];
    connections = 0;
    const client = new CompactorClient({ baseUrl, retry: { maxRetries: 2, baseDelayMs: 5 } });
    const error = await take(client, 1).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CompactorApiError);
    expect(error).toMatchObject({ status: 502 });
    expect(connections).toBe(3);
  });
});
