import { buildSummaryPrompt, detectOverflowError, prunedOutputMarker } from '@compactor/core';
import { conversation, user } from '@compactor/core/testing';
import OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stubChecksum } from './agent';
import { toolPairing } from './conversation';
import type { LlmStub } from './server';
import { startLlmStub } from './server';

let stub: LlmStub;
let client: OpenAI;

beforeAll(async () => {
  stub = await startLlmStub({ streamPieceChars: 7 });
  client = new OpenAI({ baseURL: stub.url, apiKey: 'sk-stub', maxRetries: 0 });
});
afterAll(() => stub.close());

const tool = (name: string): ChatCompletionTool => ({
  type: 'function',
  function: { name, description: `the ${name} tool`, parameters: { type: 'object', properties: {} } },
});
const TOOLS = [tool('recall'), tool('read_file'), tool('bash')];

/** The output the test's "tool" gives for a call: derived from its arguments, so each differs. */
const toolOutput = (args: string): string => `contents of ${args}\n${'x'.repeat(args.length * 3)}`;

/** One model step, streamed or not; the streamed one is assembled by the SDK's own helper. */
async function step(
  messages: ChatCompletionMessageParam[],
  stream: boolean,
  headers: Record<string, string> = {},
): Promise<ChatCompletion.Choice['message']> {
  const body = { model: 'stub-agent', messages, tools: TOOLS };
  if (!stream) {
    const completion = await client.chat.completions.create(body, { headers });
    return completion.choices[0]!.message;
  }
  const runner = client.chat.completions.stream(
    { ...body, stream_options: { include_usage: true } },
    { headers },
  );
  const completion = await runner.finalChatCompletion();
  return completion.choices[0]!.message;
}

describe('agent mode over Chat Completions (openai SDK)', () => {
  it('runs a tool-using loop: k calls per turn, then a text quoting the last result', async () => {
    const messages: ChatCompletionMessageParam[] = [{ role: 'system', content: 'You are a coding agent.' }];
    const first = stub.requests.length;
    const turns = 12;
    const steps = 3;
    for (let turn = 1; turn <= turns; turn += 1) {
      messages.push({ role: 'user', content: `Turn ${turn}: fix the next failing test.` });
      for (let call = 1; ; call += 1) {
        const reply = await step(messages, turn % 2 === 0, { 'x-stub-agent-steps': String(steps) });
        const toolCall = reply.tool_calls?.[0];
        if (!toolCall) {
          expect(call).toBe(steps + 1);
          const last = messages.at(-1) as { content: string; tool_call_id: string };
          expect(reply.content).toBe(
            `Tool result checksum: ${last.tool_call_id} ${stubChecksum(last.content)}.`,
          );
          messages.push({ role: 'assistant', content: reply.content });
          break;
        }
        expect(toolCall.type).toBe('function');
        if (toolCall.type !== 'function') throw new Error('not a function call');
        expect(toolCall.function).toEqual({
          name: 'read_file',
          arguments: JSON.stringify({ path: `file-${turn}-${call}.ts` }),
        });
        expect(reply.content).toBe(`Looking at file-${turn}-${call}.ts.`);
        messages.push({ role: 'assistant', content: reply.content, tool_calls: [toolCall] });
        messages.push({
          role: 'tool',
          tool_call_id: toolCall.id,
          content: toolOutput(toolCall.function.arguments),
        });
      }
    }
    const seen = stub.requests.slice(first);
    expect(seen).toHaveLength(turns * (steps + 1));
    const ids = seen.flatMap((record) => record.messages.flatMap((m) => m.toolCalls.map((c) => c.id)));
    expect(new Set(ids).size).toBe(turns * steps);
    for (const record of seen) {
      expect(record).toMatchObject({
        protocol: 'openai',
        status: 200,
        toolNames: ['recall', 'read_file', 'bash'],
      });
      expect(toolPairing(record.messages)).toEqual({ unansweredCalls: [], orphanResults: [] });
    }
  });

  it('recalls a cleared output when asked, then quotes the recalled output', async () => {
    const recalled = 'export function parse() { /* the original */ }';
    const messages: ChatCompletionMessageParam[] = [
      { role: 'user', content: 'Read the parser.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_7', type: 'function', function: { name: 'read_file', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'call_7', content: prunedOutputMarker('call_7') },
      { role: 'assistant', content: 'Read it.' },
      { role: 'user', content: 'Recall the parser output and check it again.' },
    ];
    const call = (await step(messages, true)).tool_calls?.[0];
    if (call?.type !== 'function') throw new Error('expected a function call');
    expect(call.function).toEqual({ name: 'recall', arguments: '{"callId":"call_7"}' });
    messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    messages.push({ role: 'tool', tool_call_id: call.id, content: recalled });
    const answer = await step(messages, false);
    expect(answer.tool_calls ?? []).toEqual([]);
    expect(answer.content).toBe(`Recalled output checksum: call_7 ${stubChecksum(recalled)}.`);
  });

  it('keeps answering a compaction request with a summary even when tools are offered', async () => {
    const prompt = buildSummaryPrompt({ messages: conversation([user('Port the CLI to TypeScript.')]) });
    const completion = await client.chat.completions.create({
      model: 'stub-summarizer',
      messages: [
        { role: 'system', content: prompt.system },
        { role: 'user', content: prompt.user },
      ],
      tools: TOOLS,
    });
    expect(completion.choices[0]?.message.tool_calls ?? []).toEqual([]);
    expect(completion.choices[0]?.message.content).toMatch(/^## Goal\nPort the CLI to TypeScript\./);
  });

  it('counts tool calls and results in the prompt tokens it reports', async () => {
    const base: ChatCompletionMessageParam[] = [{ role: 'user', content: 'go' }];
    const withCall: ChatCompletionMessageParam[] = [
      ...base,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c', type: 'function', function: { name: 'bash', arguments: '{"command":"ls -la"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'c', content: 'README.md' },
    ];
    const small = await client.chat.completions.create({ model: 'm', messages: base });
    const large = await client.chat.completions.create({ model: 'm', messages: withCall, tools: TOOLS });
    // 'bash' + arguments: 24 characters, 6 tokens, +4 framing; 'README.md': 3 tokens, +4.
    expect(large.usage!.prompt_tokens - small.usage!.prompt_tokens).toBe(6 + 4 + 3 + 4);
  });

  it('refuses a call without its result, and a result without its call, as OpenAI does', async () => {
    const call: ChatCompletionMessageParam = {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_cut', type: 'function', function: { name: 'bash', arguments: '{}' } }],
    };
    const unanswered = [{ role: 'user', content: 'go' }, call, { role: 'user', content: 'next' }] as const;
    const orphan = [
      { role: 'user', content: 'go' },
      { role: 'tool', tool_call_id: 'call_gone', content: 'x' },
    ] as const;
    for (const [messages, id] of [
      [unanswered, 'call_cut'],
      [orphan, 'call_gone'],
    ] as const) {
      const seen = stub.requests.length;
      const request = client.chat.completions.create({ model: 'm', messages: [...messages], tools: TOOLS });
      await expect(request).rejects.toMatchObject({ status: 400, type: 'invalid_request_error' });
      const error = (await request.catch((caught: unknown) => caught)) as Error;
      expect(error.message).toContain(id);
      expect(detectOverflowError({ status: 400, message: error.message }).overflow).toBe(false);
      // Recorded, so a test can find the request that broke the pairing.
      expect(stub.requests[seen]).toMatchObject({ status: 400 });
    }
  });

  it('refuses an invalid agent-steps header', async () => {
    const request = client.chat.completions.create(
      { model: 'm', messages: [{ role: 'user', content: 'go' }], tools: TOOLS },
      { headers: { 'x-stub-agent-steps': '0' } },
    );
    await expect(request).rejects.toMatchObject({ status: 400 });
  });
});
