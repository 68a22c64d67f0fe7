/**
 * Images inside `tool_result` blocks through `POST /v1/messages`: stored out of line as files of
 * their call, sent upstream intact inside that call's result; a broken one is a 400 with nothing
 * written or sent.
 */
import { describe, expect, it } from 'vitest';
import { useAnthropicDropInApi } from '../test-support/anthropic-dropin-api';
import { TENANT_A_KEY } from '../test-support/api';
import { pngBytes } from '../test-support/png';

const api = useAnthropicDropInApi();

const pngBase64 = (width: number, height: number, padding = 48): string =>
  pngBytes(width, height, padding, 5).toString('base64');

const screenshotConversation = (data: string) => [
  { role: 'user', content: 'what does the page show?' },
  {
    role: 'assistant',
    content: [{ type: 'tool_use', id: 'toolu_shot', name: 'screenshot', input: { url: 'http://app.test' } }],
  },
  {
    role: 'user',
    content: [
      {
        type: 'tool_result',
        tool_use_id: 'toolu_shot',
        content: [
          { type: 'text', text: 'captured 1024x768' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data } },
        ],
      },
    ],
  },
];

const post = (messages: unknown[], conversation: string) =>
  fetch(`${api.baseURL}/v1/messages`, {
    method: 'POST',
    headers: {
      'x-api-key': TENANT_A_KEY,
      'content-type': 'application/json',
      'x-compactor-conversation': conversation,
    },
    body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 128, messages }),
  });

describe('images inside tool_result blocks', () => {
  it('stores the image as a file of its call and sends it upstream inside that tool_result', async () => {
    const data = pngBase64(1024, 768);
    const response = await post(screenshotConversation(data), 'media-shot');
    expect(response.status, await response.clone().text()).toBe(200);
    const sent = JSON.parse(api.recorder.requestBodies.at(-1)!) as {
      messages: Array<{ role: string; content: unknown }>;
    };
    // The bytes as the client sent them (the gateway's cache breakpoint on the block aside).
    expect(sent.messages.at(-1)).toMatchObject({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_shot',
          content: [
            { type: 'text', text: 'captured 1024x768' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data } },
          ],
        },
      ],
    });
    const { rows } = await api.database.database.pool.query(
      `select p.url, p.text as call_id, p.tokens from parts p where p.type = 'file' and p.text = 'toolu_shot'`,
    );
    expect(rows).toHaveLength(1);
    expect(rows[0].url).toMatch(/^compactor-media:sha256:[0-9a-f]{64};bytes=81;px=1024x768$/);
    // Anthropic's count: 1024 × 768 / 750.
    expect(rows[0].tokens).toBe(1049);
  });

  it('refuses broken base64 in a tool_result image: 400, no session, message or media written, nothing sent', async () => {
    const mediaRows = async () =>
      (await api.database.database.pool.query('select count(*)::int as n from media_objects')).rows[0].n;
    const [before, media] = [await api.rowCounts(), await mediaRows()];
    const upstream = api.upstream.requests.length;
    const response = await post(screenshotConversation('iVBORw0KGgo*AAA'), 'media-broken');
    expect(response.status).toBe(400);
    const answer = (await response.json()) as { type: string; error: { type: string; message: string } };
    expect(answer.error.type).toBe('invalid_request_error');
    expect(answer.error.message).toMatch(/base64/);
    // The session the conversation would have had is not created either.
    expect(await api.rowCounts()).toEqual(before);
    expect(await mediaRows()).toBe(media);
    expect(api.upstream.requests.length).toBe(upstream);
  });
});
