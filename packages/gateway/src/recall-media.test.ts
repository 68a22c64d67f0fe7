/**
 * A model's recall call by media id, answered by the gateway against real Postgres: the image a
 * media marker names comes back whole (after the tool message in Chat Completions, a user message
 * holding it; inside the tool result under Messages), an id no stored part holds is said in the
 * text, and recall calls without one are answered as before, with no image message added.
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { INVALID_RECALL_ARGUMENTS, mediaNotFoundText } from '@compactor/client';
import { newSession, useTestSessions } from '@compactor/sessions/testing';
import type { Message, MessageCreateParams } from '@anthropic-ai/sdk/resources/messages';
import type { ChatCompletionMessageFunctionToolCall } from 'openai/resources/chat/completions';
import { ANTHROPIC_RECALL_TOOL, runAnthropicSteps } from './anthropic-steps';
import { answerRecall, recallExchange } from './recall-loop';
import { conversationDeps } from './test-support/conversations';

const t = useTestSessions();
const deps = conversationDeps(t, { now: new Date('2026-03-01T12:00:00Z') });

/** A PNG's signature and header of `width × height` (what the media checks read), then filler. */
function png(width: number, height: number): Buffer {
  const bytes = Buffer.alloc(97, 5);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes, 0);
  bytes.writeUInt32BE(13, 8);
  bytes.write('IHDR', 12, 'ascii');
  bytes.writeUInt32BE(width, 16);
  bytes.writeUInt32BE(height, 20);
  return bytes;
}

const IMAGE = png(64, 48);
const IMAGE_URL = `data:image/png;base64,${IMAGE.toString('base64')}`;
/** What the image's marker names: the first 16 hex digits of its SHA-256. */
const MEDIA_ID = createHash('sha256').update(IMAGE).digest('hex').slice(0, 16);
const UNKNOWN_ID = 'ab'.repeat(8);

/** A session holding the image as the result of call `toolu_1`. */
async function sessionWithImage(tenantId: string) {
  await newSession(t, tenantId, 's1');
  const session = { tenantId, id: 's1' };
  await t.messages.append(
    session,
    {
      kind: 'parsed',
      messages: [
        { id: 'm1', role: 'user', parts: [{ type: 'text', text: 'take a screenshot' }] },
        {
          id: 'm2',
          role: 'assistant',
          parts: [
            {
              type: 'tool',
              callId: 'toolu_1',
              tool: 'screenshot',
              status: 'completed',
              input: {},
              output: '',
              error: null,
            },
            { type: 'file', mime: 'image/png', url: IMAGE_URL, callId: 'toolu_1' },
          ],
        },
      ],
    },
    t.log,
  );
  return session;
}

const recallCall = (id: string, args: unknown): ChatCompletionMessageFunctionToolCall => ({
  id,
  type: 'function',
  function: { name: 'recall', arguments: JSON.stringify(args) },
});

describe('recall by media id in the drop-in', () => {
  it('answers the image a media id names, and says so of an id nothing holds', async () => {
    const session = await sessionWithImage('t-media-answer');
    const found = await answerRecall(t.database.db, session, JSON.stringify({ mediaId: MEDIA_ID }));
    expect(found.text).toBe(`media ${MEDIA_ID}: image/png, ${IMAGE.byteLength} bytes, message m2`);
    expect(found.image).toEqual({ mime: 'image/png', url: IMAGE_URL, data: IMAGE.toString('base64') });

    const unknown = await answerRecall(t.database.db, session, JSON.stringify({ mediaId: UNKNOWN_ID }));
    expect(unknown).toEqual({ text: mediaNotFoundText(UNKNOWN_ID), image: null });
    const malformed = await answerRecall(t.database.db, session, JSON.stringify({ mediaId: 'IMAGE' }));
    expect(malformed).toEqual({ text: INVALID_RECALL_ARGUMENTS, image: null });
  });

  it('Chat Completions: the image follows the tool messages in a user message; none without one', async () => {
    const session = await sessionWithImage('t-media-openai');
    const calls = [recallCall('call_m', { mediaId: MEDIA_ID }), recallCall('call_q', { query: 'x' })];
    const exchange = await recallExchange(t.database.db, session, null, calls);
    expect(exchange.map((m) => m.role)).toEqual(['assistant', 'tool', 'tool', 'user']);
    expect(exchange[1]).toMatchObject({ tool_call_id: 'call_m', content: expect.stringContaining(MEDIA_ID) });
    expect(exchange[3]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: `media ${MEDIA_ID}: image/png, ${IMAGE.byteLength} bytes, message m2` },
        { type: 'image_url', image_url: { url: IMAGE_URL } },
      ],
    });

    const plain = await recallExchange(t.database.db, session, 'looking', [
      recallCall('call_c', { callId: 'toolu_1' }),
      recallCall('call_u', { mediaId: UNKNOWN_ID }),
    ]);
    expect(plain.map((m) => m.role)).toEqual(['assistant', 'tool', 'tool']);
    expect(plain[2]).toEqual({
      role: 'tool',
      tool_call_id: 'call_u',
      content: mediaNotFoundText(UNKNOWN_ID),
    });
  });

  it('Messages: the image comes back inside the tool result, after its description', async () => {
    const session = await sessionWithImage('t-media-anthropic');
    const sent: MessageCreateParams[] = [];
    const message = (content: unknown[], stop: string): Message =>
      ({
        id: `msg_${sent.length}`,
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content,
        stop_reason: stop,
        stop_sequence: null,
        usage: { input_tokens: 10, output_tokens: 2 },
      }) as unknown as Message;
    await runAnthropicSteps(
      deps,
      {
        session,
        clientBody: { model: 'claude-sonnet-4-5', max_tokens: 512, messages: [] },
        context: {
          system: undefined,
          messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }],
          fit: 'view',
        },
        toolsWithRecall: [ANTHROPIC_RECALL_TOOL],
        recallOffered: true,
        waitMs: 0,
      },
      async (body) => {
        sent.push(body);
        if (sent.length > 1)
          return {
            message: message([{ type: 'text', text: 'seen', citations: null }], 'end_turn'),
            recallCalls: [],
          };
        const use = { type: 'tool_use', id: 'toolu_r1', name: 'recall', input: { mediaId: MEDIA_ID } };
        return { message: message([use], 'tool_use'), recallCalls: [use as never] };
      },
    );
    expect(sent).toHaveLength(2);
    // The request's last block carries the cache breakpoint besides.
    expect(sent[1]!.messages.at(-1)).toMatchObject({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_r1',
          content: [
            { type: 'text', text: `media ${MEDIA_ID}: image/png, ${IMAGE.byteLength} bytes, message m2` },
            {
              type: 'image',
              source: { type: 'base64', media_type: 'image/png', data: IMAGE.toString('base64') },
            },
          ],
        },
      ],
    });
    expect(ANTHROPIC_RECALL_TOOL).toMatchObject({
      input_schema: { properties: { mediaId: { type: 'string' } } },
    });
  });
});
