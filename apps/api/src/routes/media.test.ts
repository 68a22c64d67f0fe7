/**
 * Media parts end to end: a data: URL's bytes are stored once per tenant out of line, the part
 * counted by its header as the session's model counts it, and served back as posted in every
 * format; hostile media is a 400 with nothing written.
 */
import { toAnthropicMessages, type Message } from '@compactor/core';
import { describe, expect, it } from 'vitest';
import { useTestApi } from '../test-support/api';
import { newSession } from '../test-support/helpers';
import { pngDataUrl } from '../test-support/png';

const api = useTestApi();

const png = (width: number, height: number, padding = 64): string => pngDataUrl(width, height, padding, 7);

const post = (session: string, messages: unknown[]) =>
  api.request({
    method: 'POST',
    url: `/v1/sessions/${session}/messages`,
    payload: JSON.stringify({ messages }),
    headers: { 'content-type': 'application/json' },
  });

const imageMessage = (id: string, url: string) => ({
  id,
  role: 'user',
  parts: [
    { type: 'text', text: 'what is wrong on this screen?' },
    { type: 'file', mime: 'image/png', filename: 'screen.png', url },
  ],
});

async function stored(session: string) {
  const { rows } = await api.database.database.pool.query(
    `select p.url, p.tokens, p.mime from parts p join sessions s on s.pk = p.session_pk
      where s.id = $1 and p.type = 'file' order by p.seq, p.idx`,
    [session],
  );
  return rows as Array<{ url: string; tokens: number; mime: string }>;
}
async function mediaRows() {
  const { rows } = await api.database.database.pool.query('select sha256, tenant_id from media_objects');
  return rows;
}

describe('media parts', () => {
  it('stores the bytes once by hash, counts the image by its header, serves it back in every format', async () => {
    await newSession(api, 'media-openai');
    await newSession(api, 'media-claude', { model: { id: 'claude-sonnet-4-5' } });
    const shot = png(3840, 2160);
    const before = (await mediaRows()).length;
    for (const session of ['media-openai', 'media-claude']) {
      const response = await post(session, [
        imageMessage(`${session}-1`, shot),
        imageMessage(`${session}-2`, shot),
      ]);
      expect(response.statusCode, response.body).toBe(201);
    }
    // Four parts, one object.
    expect((await mediaRows()).length).toBe(before + 1);
    // A re-post of the same message is recognised (its hash covers the image's digest); other bytes under its id are a 409.
    const again = await post('media-openai', [imageMessage('media-openai-1', shot)]);
    expect(again.statusCode, again.body).toBe(201);
    expect(again.json().messages[0]).toMatchObject({ id: 'media-openai-1', created: false });
    const other = await post('media-openai', [imageMessage('media-openai-1', png(3840, 2160, 65))]);
    expect(other.statusCode, other.body).toBe(409);
    const [openai, claude] = [await stored('media-openai'), await stored('media-claude')];
    expect(openai[0]!.url).toMatch(/^compactor-media:sha256:[0-9a-f]{64};bytes=97;px=3840x2160$/);
    // 1,105 (OpenAI: 6 tiles) and 1,638 (Anthropic after its resize), plus the file name's tokens.
    expect(openai[0]!.tokens - 1105).toBeGreaterThan(0);
    expect(openai[0]!.tokens - 1105).toBeLessThan(5);
    expect(claude[0]!.tokens - 1638).toBeGreaterThan(0);
    expect(claude[0]!.tokens - 1638).toBeLessThan(5);

    const history = await api.request({ method: 'GET', url: '/v1/sessions/media-openai/messages' });
    expect(history.json().messages[0].parts[1].url).toBe(shot);
    const native = await api.request({
      method: 'GET',
      url: '/v1/sessions/media-openai/context?format=native',
    });
    const messages = native.json().messages as Message[];
    expect(messages[0]!.parts[1]).toMatchObject({ type: 'file', url: shot, mime: 'image/png' });
    const chat = await api.request({ method: 'GET', url: '/v1/sessions/media-openai/context?format=openai' });
    expect(chat.json().messages[0].content[1]).toEqual({ type: 'image_url', image_url: { url: shot } });
    const anthropic = toAnthropicMessages({ messages });
    expect(JSON.stringify(anthropic.messages[0])).toContain(
      JSON.stringify({ type: 'base64', media_type: 'image/png', data: shot.split(',')[1] }),
    );
  });

  it('serves the newest images the media budget keeps, the older ones as markers', async () => {
    await newSession(api, 'media-budget', { policy: { media: { keepImages: 1 } } });
    const shots = [png(800, 600, 10), png(800, 600, 11), png(800, 600, 12)];
    const response = await post(
      'media-budget',
      shots.map((url, i) => imageMessage(`budget-${i}`, url)),
    );
    expect(response.statusCode, response.body).toBe(201);
    const native = await api.request({
      method: 'GET',
      url: '/v1/sessions/media-budget/context?format=native',
    });
    const parts = (native.json().messages as Message[]).map((m) => m.parts[1]!);
    expect(parts[2]).toMatchObject({ type: 'file', url: shots[2] });
    for (const [i, part] of parts.slice(0, 2).entries()) {
      expect(part.type).toBe('text');
      expect(part.type === 'text' && part.text).toMatch(
        new RegExp(
          `^\\[Older image screen\\.png not shown \\(image/png, 800×600 px, 1 KB\\), message budget-${i}; media id [0-9a-f]{16}\\]$`,
        ),
      );
    }
  });

  it('stores an image a PATCH adds alike, and refuses a hostile one with nothing written', async () => {
    await newSession(api, 'media-patch');
    const posted = await post('media-patch', [
      { id: 'turn', role: 'user', parts: [{ type: 'text', text: 'here is the screen' }] },
    ]);
    expect(posted.statusCode, posted.body).toBe(201);
    const patch = (url: string) =>
      api.request({
        method: 'PATCH',
        url: '/v1/sessions/media-patch/messages/turn',
        payload: { parts: [{ type: 'file', mime: 'image/png', filename: 'late.png', url }] },
      });
    const refused = await patch(png(100_000, 100_000));
    expect(refused.statusCode, refused.body).toBe(400);
    expect(await stored('media-patch')).toEqual([]);
    const shot = png(640, 480, 5);
    const patched = await patch(shot);
    expect(patched.statusCode, patched.body).toBe(200);
    expect((await stored('media-patch'))[0]!.url).toMatch(
      /^compactor-media:sha256:[0-9a-f]{64};bytes=38;px=640x480$/,
    );
    const native = await api.request({
      method: 'GET',
      url: '/v1/sessions/media-patch/context?format=native',
    });
    expect(native.json().messages[0].parts[1]).toMatchObject({ type: 'file', url: shot });
  });

  it('takes an image through the large-body thread alike', async () => {
    await newSession(api, 'media-large');
    const big = png(1024, 1024, 1_200_000);
    const response = await post('media-large', [imageMessage('large-1', big)]);
    expect(response.statusCode, response.body).toBe(201);
    const [part] = await stored('media-large');
    expect(part!.url).toMatch(/^compactor-media:/);
    expect(part!.tokens - 765).toBeLessThan(5);
    const native = await api.request({
      method: 'GET',
      url: '/v1/sessions/media-large/context?format=native',
    });
    expect(native.json().messages[0].parts[1].url).toBe(big);
  });

  it.each([
    ['a header claiming 100,000 × 100,000 px', png(100_000, 100_000), /100000×100000/],
    [
      'an image that is no image',
      `data:image/png;base64,${Buffer.from('not an image at all').toString('base64')}`,
      /not a readable/,
    ],
    ['broken base64', 'data:image/png;base64,iVBORw0KGgo*AAA', /well-formed base64/],
    [
      'a stored reference posted by the client',
      `compactor-media:sha256:${'0'.repeat(64)};bytes=1`,
      /own references/,
    ],
    [
      'an SVG with script',
      `data:image/svg+xml;base64,${Buffer.from('<svg><script>alert(1)</script></svg>').toString('base64')}`,
      /SVG/,
    ],
  ])('refuses %s with a 400 and writes nothing', async (_, url, message) => {
    const session = `media-hostile-${Math.random().toString(36).slice(2, 8)}`;
    await newSession(api, session);
    const before = (await mediaRows()).length;
    const response = await post(session, [
      { id: 'ok', role: 'user', parts: [{ type: 'text', text: 'fine' }] },
      imageMessage('bad', url),
    ]);
    expect(response.statusCode, response.body).toBe(400);
    expect(response.json().error.message).toMatch(message);
    expect(await stored(session)).toEqual([]);
    const { rows } = await api.database.database.pool.query(
      'select count(*)::int as n from messages m join sessions s on s.pk = m.session_pk where s.id = $1',
      [session],
    );
    expect(rows[0].n).toBe(0);
    expect((await mediaRows()).length).toBe(before);
  });
});
