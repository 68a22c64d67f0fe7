import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CompactorClient } from '@compactor/client';
import { REPLAY_CLIENT } from '../replay';
import { replayRun } from './replay-run';

/** An API that refuses every request as a tenant's cap does: 429 with `Retry-After`. */
const requests: string[] = [];
const server = http.createServer((req, res) => {
  requests.push(`${req.method} ${req.url}`);
  req.resume();
  res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '0' }).end(
    JSON.stringify({
      error: { code: 'too_many_requests', message: 'too many sessions created; retry shortly' },
    }),
  );
});
let baseUrl = '';

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('replayRun with the replay client', () => {
  it('fails the run on a refusal, once, with the request and the API error in the report', async () => {
    const client = new CompactorClient({ ...REPLAY_CLIENT, baseUrl, apiKey: 'k' });
    const report = await replayRun(
      { client, defaultModel: 'stub-summarizer' },
      { window: 16_000, usage: 'rescale', timeoutMs: 1_000, pruneWaitMs: 100 },
      {
        key: 't.jsonl',
        file: 't.jsonl',
        format: 'compactor',
        messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'hi' }] }],
      },
      { label: 'default', policyLabel: 'default', policy: {}, summarizerModel: null },
      's1',
    );
    expect(report).toMatchObject({
      status: 'failed',
      error: 'POST /v1/sessions → 429 too_many_requests: too many sessions created; retry shortly',
      points: [],
    });
    expect(requests).toEqual(['POST /v1/sessions']);
  });
});
