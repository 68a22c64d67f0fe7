/**
 * `Content-Type: application/json` with an empty body is no body: many HTTP clients send the
 * header on every request, body-less DELETEs and POSTs included. Routes that need a body still
 * answer 400, and a malformed or `null` body is still a 400.
 */
import { describe, expect, it } from 'vitest';
import { useTestApi } from '../test-support/api';
import { newSession } from '../test-support/helpers';

const api = useTestApi();
const JSON_HEADERS = { 'content-type': 'application/json' };

async function withMessage(id: string): Promise<void> {
  await newSession(api, id);
  const appended = await api.request({
    method: 'POST',
    url: `/v1/sessions/${id}/messages`,
    payload: { messages: [{ role: 'user', parts: [{ type: 'text', text: 'Fix the failing test.' }] }] },
  });
  expect(appended.statusCode, appended.body).toBe(201);
}

/** A request whose body is exactly `body` (an empty string sends none) under a JSON content type. */
function emptyJson(method: 'POST' | 'DELETE', url: string, body = '') {
  return api.request({ method, url, headers: JSON_HEADERS, body });
}

describe('an empty body under a JSON content type', () => {
  it.each(['', ' \n\t '])('is no body on the body-less routes (%j)', async (body) => {
    const id = `empty-body-${body.length}`;
    await withMessage(id);

    const prune = await emptyJson('POST', `/v1/sessions/${id}/prune`, body);
    expect(prune.statusCode, prune.body).toBe(202);

    const compaction = await emptyJson('POST', `/v1/sessions/${id}/compactions`, body);
    expect(compaction.statusCode, compaction.body).toBe(202);

    const revert = await emptyJson('POST', `/v1/compactions/${compaction.json().id}/revert`, body);
    // The compaction has not completed: the route ran and said why, it did not refuse the body.
    expect(revert.statusCode, revert.body).toBe(409);
    expect(revert.json().error.details.reason).toBe('not_completed');

    const removed = await emptyJson('DELETE', `/v1/sessions/${id}`, body);
    expect(removed.statusCode, removed.body).toBe(204);
  });

  it('still fails a route that needs a body, with the validation error and nothing written', async () => {
    await newSession(api, 'needs-body');
    const before = await api.counts();
    const response = await emptyJson('POST', '/v1/sessions/needs-body/messages');
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('validation_error');
    expect(await api.counts()).toEqual(before);
  });

  it('leaves malformed JSON and a JSON null a 400', async () => {
    await withMessage('malformed');
    const broken = await emptyJson('POST', '/v1/sessions/malformed/compactions', '{"reason"');
    expect(broken.statusCode).toBe(400);
    const nothing = await emptyJson('POST', '/v1/sessions/malformed/compactions', 'null');
    expect(nothing.statusCode).toBe(400);
    const compactions = await api.request({ method: 'GET', url: '/v1/sessions/malformed/compactions' });
    expect(compactions.json().compactions).toEqual([]);
  });
});
