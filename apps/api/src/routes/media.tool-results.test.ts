/**
 * Images inside tool results end to end: a file part naming its call is stored out of line like
 * any media, counted, served back inside its call's result, subject to the media budget, and the
 * marker that replaces it is recallable by id, by its own tenant only.
 */
import type { Message } from '@compactor/core';
import { describe, expect, it } from 'vitest';
import { TENANT_B_KEY, useTestApi } from '../test-support/api';
import { newSession } from '../test-support/helpers';
import { pngDataUrl } from '../test-support/png';

const api = useTestApi();

const png = (width: number, height: number, padding = 64): string => pngDataUrl(width, height, padding, 9);

const post = (session: string, messages: unknown[], key?: string) =>
  api.request({
    method: 'POST',
    url: `/v1/sessions/${session}/messages`,
    payload: { messages },
    ...(key ? { key } : {}),
  });

/** An assistant turn whose screenshot call returned `url`. */
const screenshotTurn = (id: string, callId: string, url: string) => ({
  id,
  role: 'assistant',
  parts: [
    { type: 'tool', callId, tool: 'screenshot', status: 'completed', input: {}, output: 'captured' },
    { type: 'file', mime: 'image/png', url, callId },
  ],
});

async function storedFiles(session: string) {
  const { rows } = await api.database.database.pool.query(
    `select p.url, p.tokens, p.text as call_id from parts p join sessions s on s.pk = p.session_pk
      where s.id = $1 and p.type = 'file' order by p.seq, p.idx`,
    [session],
  );
  return rows as Array<{ url: string; tokens: number; call_id: string | null }>;
}

const context = async (session: string, format: 'native' | 'openai') =>
  (await api.request({ method: 'GET', url: `/v1/sessions/${session}/context?format=${format}` })).json();

describe('images inside tool results', () => {
  it('stores one out of line, counts it, and serves it inside its call in every format', async () => {
    await newSession(api, 'tool-shot');
    const shot = png(1280, 800, 20);
    const response = await post('tool-shot', [
      { id: 'ask', role: 'user', parts: [{ type: 'text', text: 'look at the page' }] },
      screenshotTurn('turn', 'call_1', shot),
    ]);
    expect(response.statusCode, response.body).toBe(201);
    const [file] = await storedFiles('tool-shot');
    expect(file!.url).toMatch(/^compactor-media:sha256:[0-9a-f]{64};bytes=53;px=1280x800$/);
    expect(file!.call_id).toBe('call_1');
    // OpenAI's high-detail count of 1280×800 (1229×768 after its resize): 6 tiles, 85 + 6 × 170.
    expect(file!.tokens).toBe(1105);

    const native = (await context('tool-shot', 'native')).messages as Message[];
    expect(native[1]!.parts[1]).toEqual({
      type: 'file',
      mime: 'image/png',
      filename: null,
      url: shot,
      tokens: 1105,
      callId: 'call_1',
    });
    const chat = (await context('tool-shot', 'openai')).messages;
    expect(chat.slice(2)).toEqual([
      { role: 'tool', tool_call_id: 'call_1', content: 'captured' },
      {
        role: 'user',
        content: [
          { type: 'text', text: '[Images returned by tool call call_1]' },
          { type: 'image_url', image_url: { url: shot } },
        ],
      },
    ]);
  });

  it('takes a result image with the PATCH that finishes its call, and refuses one sent without it', async () => {
    await newSession(api, 'tool-patch');
    const running = { type: 'tool', callId: 'call_1', tool: 'screenshot', status: 'running', input: {} };
    const posted = await post('tool-patch', [{ id: 'turn', role: 'assistant', parts: [running] }]);
    expect(posted.statusCode, posted.body).toBe(201);
    const patch = (parts: unknown[]) =>
      api.request({ method: 'PATCH', url: '/v1/sessions/tool-patch/messages/turn', payload: { parts } });
    const shot = png(640, 480, 7);
    const file = { type: 'file', mime: 'image/png', url: shot, callId: 'call_1' };
    const alone = await patch([file]);
    expect(alone.statusCode, alone.body).toBe(400);
    expect(await storedFiles('tool-patch')).toEqual([]);
    const finished = await patch([{ ...running, status: 'completed', output: 'captured' }, file]);
    expect(finished.statusCode, finished.body).toBe(200);
    // 640×480 is 2 tiles: 85 + 2 × 170.
    expect(await storedFiles('tool-patch')).toEqual([
      { url: expect.stringMatching(/^compactor-media:sha256:/), tokens: 425, call_id: 'call_1' },
    ]);
    const native = (await context('tool-patch', 'native')).messages as Message[];
    expect(native[0]!.parts[1]).toMatchObject({ type: 'file', url: shot, callId: 'call_1' });
  });

  it.each([
    ['broken base64', 'data:image/png;base64,iVBORw0KGgo*AAA', /well-formed base64/],
    ['a header claiming 100,000 × 100,000 px', png(100_000, 100_000), /100000×100000/],
    [
      'a type that is no image',
      `data:image/x-icon;base64,${Buffer.from('icon').toString('base64')}`,
      /not accepted/,
    ],
  ])('refuses %s in a tool result with a 400 and writes nothing', async (_, url, message) => {
    const session = `tool-hostile-${Math.random().toString(36).slice(2, 8)}`;
    await newSession(api, session);
    const response = await post(session, [screenshotTurn('turn', 'call_1', url)]);
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json().error.message).toMatch(message);
    expect(await storedFiles(session)).toEqual([]);
  });

  it('puts older result images behind markers whose media id recall gives back, to their tenant only', async () => {
    await newSession(api, 'tool-recall', { policy: { media: { keepImages: 1 } } });
    const [older, newer] = [png(800, 600, 31), png(800, 600, 32)];
    const response = await post('tool-recall', [
      { id: 'ask', role: 'user', parts: [{ type: 'text', text: 'compare the two pages' }] },
      screenshotTurn('turn-1', 'call_1', older),
      screenshotTurn('turn-2', 'call_2', newer),
    ]);
    expect(response.statusCode, response.body).toBe(201);
    const native = (await context('tool-recall', 'native')).messages as Message[];
    expect(native[2]!.parts[1]).toMatchObject({ type: 'file', url: newer, callId: 'call_2' });
    const marker = native[1]!.parts[1]!;
    expect(marker.type).toBe('text');
    const id = /media id ([0-9a-f]{16})/.exec(marker.type === 'text' ? marker.text : '')![1]!;

    const recalled = await api.request({
      method: 'GET',
      url: `/v1/sessions/tool-recall/recall?mediaId=${id}`,
    });
    expect(recalled.statusCode, recalled.body).toBe(200);
    expect(recalled.json()).toMatchObject({
      kind: 'media',
      messageId: 'turn-1',
      callId: 'call_1',
      part: { type: 'file', mime: 'image/png', filename: null, url: older },
      bytes: 64,
      width: 800,
      height: 600,
    });
    expect(recalled.json().mediaId).toMatch(new RegExp(`^${id}[0-9a-f]{48}$`));

    // Tenant B's session of the same id holds the same bytes: still none of tenant A's parts.
    await api.request({
      method: 'POST',
      url: '/v1/sessions',
      payload: { id: 'tool-recall', model: { id: 'gpt-4o' } },
      key: TENANT_B_KEY,
    });
    const other = await api.request({
      method: 'GET',
      url: `/v1/sessions/tool-recall/recall?mediaId=${id}`,
      key: TENANT_B_KEY,
    });
    expect(other.statusCode, other.body).toBe(404);
    const unknown = await api.request({
      method: 'GET',
      url: `/v1/sessions/tool-recall/recall?mediaId=${'0'.repeat(16)}`,
    });
    expect(unknown.statusCode).toBe(404);
    const malformed = await api.request({
      method: 'GET',
      url: '/v1/sessions/tool-recall/recall?mediaId=XYZ',
    });
    expect(malformed.statusCode).toBe(400);
  });
});
