import { describe, expect, it } from 'vitest';
import { RECALL_TOOL } from '@compactor/contract';
import { useTestApi } from '../test-support/api';

const api = useTestApi();

const get = (url: string) => api.request({ method: 'GET', url });

async function sessionWithOneTurn(id: string) {
  await api.request({ method: 'POST', url: '/v1/sessions', payload: { id, model: { id: 'gpt-4o' } } });
  await api.request({
    method: 'POST',
    url: `/v1/sessions/${id}/messages`,
    payload: { messages: [{ role: 'user', parts: [{ type: 'text', text: 'hello' }] }] },
  });
}

describe('GET /v1/sessions/:id/context?tools=recall', () => {
  it('adds the recall tool as a Chat Completions tools entry after the messages', async () => {
    await sessionWithOneTurn('t-recall');
    const response = await get('/v1/sessions/t-recall/context?format=openai&tools=recall');
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(Object.keys(body)).toEqual([
      'messages',
      'compactionId',
      'boundarySeq',
      'tokens',
      'fit',
      'usable',
      'activeCompaction',
      'tools',
    ]);
    expect(body.messages).toEqual([{ role: 'user', content: 'hello' }]);
    expect(body.tools).toEqual([RECALL_TOOL]);
    const [tool] = body.tools;
    expect(tool.type).toBe('function');
    expect(tool.function.name).toBe('recall');
    expect(tool.function.description).toContain('[Old tool result content cleared — recall <callId>]');
    expect(tool.function.parameters).toEqual({
      type: 'object',
      properties: {
        callId: expect.objectContaining({ type: 'string', minLength: 1, maxLength: 200 }),
        query: expect.objectContaining({ type: 'string', minLength: 1, maxLength: 500 }),
        kind: expect.objectContaining({ type: 'string', enum: ['files', 'commands', 'facts'] }),
        limit: expect.objectContaining({ type: 'integer', minimum: 1, maximum: 20 }),
        mediaId: expect.objectContaining({ type: 'string', pattern: '^[0-9a-f]{16,64}$' }),
      },
      additionalProperties: false,
    });
  });

  it('leaves the answer unchanged without tools: no tools key, the same bytes as before', async () => {
    await sessionWithOneTurn('t-absent');
    const openai = await get('/v1/sessions/t-absent/context?format=openai');
    expect(openai.statusCode).toBe(200);
    expect(openai.payload).toBe(
      '{"messages":[{"role":"user","content":"hello"}],"compactionId":null,"boundarySeq":null,"tokens":' +
        `${openai.json().tokens},"fit":"view","usable":${openai.json().usable},"activeCompaction":null}`,
    );
    const native = await get('/v1/sessions/t-absent/context');
    expect(Object.keys(native.json())).toEqual([
      'messages',
      'compactionId',
      'boundarySeq',
      'tokens',
      'fit',
      'usable',
      'activeCompaction',
    ]);
  });

  it.each([
    ['an unknown tool', 'format=openai&tools=search'],
    ['an empty name', 'format=openai&tools='],
    ['a list', 'format=openai&tools=recall,recall'],
    ['the parameter twice', 'format=openai&tools=recall&tools=recall'],
    ['a NUL byte', 'format=openai&tools=recall%00'],
    ['the native format', 'tools=recall'],
    ['the native format, explicit', 'format=native&tools=recall'],
  ])('answers 400 for %s', async (_, query) => {
    await sessionWithOneTurn('t-bad');
    const response = await get(`/v1/sessions/t-bad/context?${query}`);
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('validation_error');
    expect(JSON.stringify(response.json().error.details.issues)).toContain('tools');
  });

  it('answers 404 for an unknown session, with or without tools', async () => {
    const response = await get('/v1/sessions/t-nobody/context?format=openai&tools=recall');
    expect(response.statusCode).toBe(404);
  });
});
