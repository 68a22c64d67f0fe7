/** The `fetch` option: every request, the event stream's included, goes through the caller's transport. */
import { describe, expect, it } from 'vitest';
import { sessionExample } from './test-support/session-example.js';
import { CompactorClient } from './client.js';

describe('CompactorClient({ fetch })', () => {
  it('sends calls and the event stream through the given fetch, with the usual headers', async () => {
    const seen: Array<{ url: string; headers: Headers }> = [];
    const transport: typeof fetch = async (input, init) => {
      seen.push({ url: String(input), headers: new Headers(init?.headers) });
      if (String(input).endsWith('/events'))
        return new Response(
          'id: 7\nevent: session.deleted\ndata: {"type":"session.deleted","sessionId":"s1","compactionId":null,"at":"2026-01-01T00:00:00.000Z","data":{}}\n\n',
          { status: 200, headers: { 'content-type': 'text/event-stream' } },
        );
      return new Response(JSON.stringify(sessionExample), {
        status: 200,
        headers: { 'content-type': 'application/json' },
      });
    };
    const client = new CompactorClient({ baseUrl: 'http://compactor.test', apiKey: 'k', fetch: transport });

    expect((await client.getSession('s1')).id).toBe((sessionExample as { id: string }).id);
    const events = [];
    for await (const event of client.events('s1')) events.push(event.type);

    expect(events).toEqual(['session.deleted']);
    expect(seen.map((s) => s.url)).toEqual([
      'http://compactor.test/v1/sessions/s1',
      'http://compactor.test/v1/sessions/s1/events',
    ]);
    expect(seen.every((s) => s.headers.get('authorization') === 'Bearer k')).toBe(true);
  });
});
