import { describe, expect, it } from 'vitest';
import { useTestApi } from '../test-support/api';
import { newSession } from '../test-support/helpers';
import { capturedLogger } from '../test-support/log-capture';

/** Every line the server logs, as written. */
const { logger, lines } = capturedLogger();

// As the local stack of the demo and the replay runs it: REQUEST_LOG_LEVEL below LOG_LEVEL.
const api = useTestApi({ server: { logger, requestLogLevel: 'debug' } });

describe('REQUEST_LOG_LEVEL below LOG_LEVEL', () => {
  it('logs no line for a request that succeeds', async () => {
    await newSession(api, 'quiet');
    const appended = await api.request({
      method: 'POST',
      url: '/v1/sessions/quiet/messages',
      payload: { messages: [{ role: 'user', parts: [{ type: 'text', text: 'hello' }] }] },
    });
    expect(appended.statusCode).toBe(201);
    const parsed = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(parsed.filter((l) => l.msg === 'request completed' || l.msg === 'incoming request')).toEqual([]);
  });
});
