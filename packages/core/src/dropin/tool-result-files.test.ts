/**
 * Images inside tool results: an Anthropic `tool_result` image becomes a file part naming its
 * call, written with the call, and every rendering puts it back in that call's result.
 */
import { AppendMessagesBody, PatchMessageBody } from '@compactor/contract';
import { describe, expect, it } from 'vitest';
import type { FilePart } from '../model';
import { toOpenAIMessages } from '../openai-format';
import { serializeTranscript } from '../transcript';
import { applyMediaBudget } from '../media/budget';
import { dataUrl, pngHeader } from '../media/test-images';
import { message, text, toolPart } from '../test-support/builders';
import { anthropicElements } from './anthropic-elements';
import { toAnthropicMessages } from './anthropic-render';
import { suffixWrites } from './suffix-writes';

const png = dataUrl('image/png', pngHeader(64, 48, 32));
const pngBase64 = png.slice('data:image/png;base64,'.length);

const screenshotTurn = [
  { role: 'user', content: 'take a screenshot' },
  {
    role: 'assistant',
    content: [{ type: 'tool_use', id: 'toolu_1', name: 'screenshot', input: {} }],
  },
  {
    role: 'user',
    content: [
      {
        type: 'tool_result',
        tool_use_id: 'toolu_1',
        content: [
          { type: 'text', text: 'captured the window' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: pngBase64 } },
        ],
      },
    ],
  },
];

const resultFile = (callId: string): FilePart => ({
  type: 'file',
  mime: 'image/png',
  filename: null,
  url: png,
  tokens: 6,
  callId,
});

describe('tool results that hold images', () => {
  it('reads an Anthropic tool_result image as a file of its call, written with the call', () => {
    const elements = anthropicElements(undefined, screenshotTurn);
    expect(elements[2]!.toolResults).toEqual([
      {
        callId: 'toolu_1',
        output: 'captured the window',
        error: null,
        files: [{ type: 'file', mime: 'image/png', filename: null, url: png, callId: 'toolu_1' }],
      },
    ]);
    const { appends, patches } = suffixWrites(elements, 0);
    expect(patches).toEqual([]);
    expect(appends[1]!.parts).toEqual([
      {
        type: 'tool',
        callId: 'toolu_1',
        tool: 'screenshot',
        status: 'completed',
        input: {},
        output: 'captured the window',
        error: null,
      },
      { type: 'file', mime: 'image/png', filename: null, url: png, callId: 'toolu_1' },
    ]);
    // What the store is asked to write is what the API admits.
    expect(AppendMessagesBody.safeParse({ messages: appends }).success).toBe(true);
  });

  it('renders the file inside its tool_result for Anthropic, intact', () => {
    const turn = message(2, 'assistant', [
      toolPart('screenshot', 3, { callId: 'toolu_1', output: 'captured the window' }),
      text('It shows a login form.'),
      resultFile('toolu_1'),
    ]);
    const { messages } = toAnthropicMessages({ messages: [message(1, 'user', [text('go')]), turn] });
    expect(messages.slice(1)).toEqual([
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'screenshot', input: {} }] },
      {
        role: 'user',
        content: [
          {
            type: 'tool_result',
            tool_use_id: 'toolu_1',
            content: [
              { type: 'text', text: 'captured the window' },
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: pngBase64 } },
            ],
          },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'It shows a login form.' }] },
    ]);
  });

  it('renders it for Chat Completions as a user message of images after the tool messages', () => {
    const turn = message(2, 'assistant', [
      toolPart('screenshot', 3, { callId: 'call_1', output: 'captured' }),
      toolPart('read', 3, { callId: 'call_2', output: 'text' }),
      resultFile('call_1'),
      { ...resultFile('call_2'), mime: 'application/pdf', filename: 'spec.pdf' },
    ]);
    const rendered = toOpenAIMessages([turn]);
    expect(rendered.slice(1)).toEqual([
      { role: 'tool', tool_call_id: 'call_1', content: 'captured' },
      {
        role: 'tool',
        tool_call_id: 'call_2',
        content: 'text\n\n[Attached file: spec.pdf (application/pdf)]',
      },
      {
        role: 'user',
        content: [
          { type: 'text', text: '[Images returned by tool call call_1]' },
          { type: 'image_url', image_url: { url: png } },
        ],
      },
    ]);
  });

  it('shows the summarizer a placeholder naming the tool whose result the image is, never its bytes', () => {
    const turn = message(2, 'assistant', [
      toolPart('screenshot', 3, { callId: 'call_1', output: 'captured' }),
      text('Now reading the file.'),
      toolPart('read', 3, { callId: 'call_2', output: 'text' }),
      resultFile('call_1'),
    ]);
    const transcript = serializeTranscript([turn]);
    expect(transcript).toContain('[Assistant attached file: unnamed image (image/png) from tool screenshot]');
    expect(transcript).not.toContain(pngBase64);
  });

  it("is left out by the media budget like any image, its marker naming the image's own call", () => {
    const turn = message(2, 'assistant', [
      toolPart('screenshot', 3, { callId: 'call_1', output: 'captured' }),
      toolPart('read', 3, { callId: 'call_2', output: 'text' }),
      resultFile('call_1'),
    ]);
    const { messages, elided } = applyMediaBudget([turn], { keepImages: 0, keepTokens: 0 });
    expect(elided).toBe(1);
    const marker = messages[0]!.parts[2]!;
    expect(marker.type === 'text' && marker.text).toMatch(
      /^\[Older image not shown \(image\/png.*after call call_1/,
    );
  });

  it("refuses a result's file whose call is not in the same parts, and broken base64 in one", () => {
    const file = { type: 'file', mime: 'image/png', url: png, callId: 'call_9' };
    const call = { type: 'tool', callId: 'call_1', tool: 'shot', status: 'completed', output: '' };
    const alone = AppendMessagesBody.safeParse({ messages: [{ role: 'assistant', parts: [call, file] }] });
    expect(alone.success).toBe(false);
    expect(alone.error!.issues[0]!.path).toEqual(['messages', 0, 'parts', 1, 'callId']);
    expect(PatchMessageBody.safeParse({ parts: [file] }).success).toBe(false);
    expect(PatchMessageBody.safeParse({ parts: [{ ...call, callId: 'call_9' }, file] }).success).toBe(true);
    const broken = { ...file, callId: 'call_1', url: 'data:image/png;base64,iVBOR*w0K' };
    const refused = AppendMessagesBody.safeParse({
      messages: [{ role: 'assistant', parts: [call, broken] }],
    });
    expect(refused.error!.issues[0]!.message).toBe('the data: URL is not well-formed base64');
  });
});
