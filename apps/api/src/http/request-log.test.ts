import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { useTestApi } from '../test-support/api';

/** Every line the server logs, parsed. */
const lines: Record<string, unknown>[] = [];
const sink = new Writable({
  write(chunk: Buffer, _encoding, done) {
    lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
    done();
  },
});

// As the local stack of the demo and the replay runs it: REQUEST_LOG_LEVEL below LOG_LEVEL.
const api = useTestApi({ server: { logger: pino({ level: 'info' }, sink), requestLogLevel: 'debug' } });

describe('REQUEST_LOG_LEVEL below LOG_LEVEL', () => {
  it('logs no line for a request that succeeds', async () => {
    const created = await api.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: { id: 'quiet', model: { id: 'gpt-4o' } },
    });
    expect(created.statusCode).toBe(201);
    const appended = await api.request({
      method: 'POST',
      url: '/v1/sessions/quiet/messages',
      payload: { messages: [{ role: 'user', parts: [{ type: 'text', text: 'hello' }] }] },
    });
    expect(appended.statusCode).toBe(201);
    expect(lines.filter((l) => l.msg === 'request completed' || l.msg === 'incoming request')).toEqual([]);
  });
});
