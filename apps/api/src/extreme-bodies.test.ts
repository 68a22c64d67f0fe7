/**
 * Two fixed cases at sizes the fuzz suite (fuzz.test.ts) does not generate: a 100,000-element
 * array stored as sent, and JSON nested 100,000 deep refused without a write. Sent and checked
 * with the fuzz harness: never a 5xx, a 4xx writes nothing.
 */
import { describe, expect, it } from 'vitest';
import { useTestApi } from './test-support/api';
import { fuzzHarness } from './test-support/fuzz-harness';
import { asJson, toJson, wideArray } from './test-support/fuzz';
import { newSession } from './test-support/helpers';

const api = useTestApi();
const { send, check } = fuzzHarness(api);

describe('bodies 100,000 wide and deep', () => {
  it('a 100,000-element tool input is stored as sent', async () => {
    await newSession(api, 'fz-wide');
    const input = wideArray(100_000);
    const response = await check({
      method: 'POST',
      url: '/v1/sessions/fz-wide/messages',
      wire: asJson({
        messages: [
          {
            id: 'w1',
            role: 'assistant',
            parts: [{ type: 'tool', callId: 'c', tool: 't', status: 'pending', input }],
          },
        ],
      }),
    });
    expect(response.statusCode, response.body).toBe(201);
    const stored = (await send({ method: 'GET', url: '/v1/sessions/fz-wide/messages' })).json().messages[0];
    expect(stored.parts[0].input).toEqual(JSON.parse(input.text));
    expect(toJson(stored.parts[0].input)).toBe(input.text);
  });

  it('a body of JSON nested 100,000 deep is a 400 that writes nothing', async () => {
    for (const deep of [
      `${'['.repeat(100_000)}${']'.repeat(100_000)}`,
      `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`,
    ]) {
      const response = await check({
        method: 'POST',
        url: '/v1/sessions',
        wire: {
          payload: `{"model":{"id":"gpt-4o"},"metadata":{"deep":${deep}}}`,
          contentType: 'application/json',
        },
      });
      expect(response.statusCode).toBe(400);
    }
  });
});
