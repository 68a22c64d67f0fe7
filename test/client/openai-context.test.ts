/**
 * The `format=openai` context is typed as Chat Completions messages: what `getContext` returns
 * is assignable to the OpenAI SDK's `ChatCompletionMessageParam[]` without a cast (checked by
 * `npm run typecheck`, which includes this file), and what the real API emits for every kind of
 * part matches the contract's schema and can be sent as is.
 */
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { OpenAIMessageOut, type OpenAIMessage } from '@compactor/contract';
import { useLiveApi } from './live-api';

const live = useLiveApi();

describe('GET /v1/sessions/:id/context?format=openai', () => {
  it('is typed as the OpenAI SDK message params', () => {
    expectTypeOf<OpenAIMessage>().toExtend<ChatCompletionMessageParam>();
    expectTypeOf<OpenAIMessage[]>().toExtend<ChatCompletionMessageParam[]>();
  });

  it('renders every part kind as Chat Completions messages the SDK accepts', async () => {
    const client = live.client();
    await client.createSession({ id: 'oa-1', model: { id: 'gpt-4o' } });
    await client.appendMessages('oa-1', [
      { role: 'system', parts: [{ type: 'text', text: 'You are terse.' }] },
      {
        role: 'user',
        parts: [
          { type: 'text', text: 'What is in this picture and in notes.pdf?' },
          { type: 'file', mime: 'image/png', url: 'https://example.test/cat.png' },
          { type: 'file', mime: 'application/pdf', filename: 'notes.pdf', url: 'https://example.test/n.pdf' },
        ],
      },
      {
        id: 'turn',
        role: 'assistant',
        parts: [
          { type: 'reasoning', text: 'Look first.' },
          { type: 'text', text: 'Let me look.' },
          {
            type: 'tool',
            callId: 'c1',
            tool: 'vision.describe',
            status: 'completed',
            input: 'cat.png',
            output: 'a cat',
          },
          {
            type: 'tool',
            callId: 'c2',
            tool: 'read',
            status: 'error',
            input: { path: 'notes.pdf' },
            error: 'EACCES',
          },
          { type: 'tool', callId: 'c3', tool: 'bash', status: 'running', input: { command: 'ls' } },
          { type: 'text', text: 'A cat; the notes are unreadable.' },
        ],
        finish: 'stop',
      },
    ]);

    const context = await client.getContext('oa-1', { format: 'openai' });
    // No cast: the contract's type is the SDK's.
    const params: ChatCompletionMessageParam[] = context.messages;
    expect(params.map((m) => OpenAIMessageOut.safeParse(m).success)).toEqual(params.map(() => true));
    expect(context.messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in this picture and in notes.pdf?' },
          { type: 'image_url', image_url: { url: 'https://example.test/cat.png' } },
          { type: 'text', text: '[Attached file: notes.pdf (application/pdf)]' },
        ],
      },
      {
        role: 'assistant',
        content: 'Let me look.',
        tool_calls: [
          {
            id: 'c1',
            type: 'function',
            function: { name: 'vision_describe', arguments: '{"input":"cat.png"}' },
          },
          { id: 'c2', type: 'function', function: { name: 'read', arguments: '{"path":"notes.pdf"}' } },
          { id: 'c3', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'a cat' },
      { role: 'tool', tool_call_id: 'c2', content: 'EACCES' },
      { role: 'tool', tool_call_id: 'c3', content: '[Tool execution was interrupted]' },
      { role: 'assistant', content: 'A cat; the notes are unreadable.' },
    ]);
  });
});
