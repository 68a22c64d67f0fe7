import Anthropic from '@anthropic-ai/sdk';
import type { Message, MessageParam, Tool, ToolUseBlock } from '@anthropic-ai/sdk/resources/messages';
import { buildSummaryPrompt, prunedOutputMarker } from '@compactor/core';
import { conversation, user } from '@compactor/core/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stubChecksum } from './agent';
import { toolPairing } from './conversation';
import type { LlmStub } from './server';
import { startLlmStub } from './server';

let stub: LlmStub;
let client: Anthropic;

beforeAll(async () => {
  stub = await startLlmStub({ streamPieceChars: 9 });
  client = new Anthropic({ baseURL: stub.origin, apiKey: 'sk-ant-stub', maxRetries: 0 });
});
afterAll(() => stub.close());

const tool = (name: string): Tool => ({
  name,
  description: `the ${name} tool`,
  input_schema: { type: 'object' },
});
const TOOLS = [tool('Read'), tool('Bash'), tool('recall')];

async function step(
  messages: MessageParam[],
  options: { stream: boolean; thinking?: boolean; headers?: Record<string, string> },
): Promise<Message> {
  const body = {
    model: 'stub-claude',
    max_tokens: 1_000,
    system: [
      { type: 'text' as const, text: 'You are Claude Code.', cache_control: { type: 'ephemeral' as const } },
    ],
    messages,
    tools: TOOLS,
    ...(options.thinking ? { thinking: { type: 'enabled' as const, budget_tokens: 1_024 } } : {}),
  };
  const requestOptions = { headers: options.headers ?? {} };
  return options.stream
    ? client.messages.stream(body, requestOptions).finalMessage()
    : client.messages.create(body, requestOptions);
}

const toolUses = (message: Message): ToolUseBlock[] =>
  message.content.filter((block): block is ToolUseBlock => block.type === 'tool_use');

describe('agent mode over Anthropic Messages (@anthropic-ai/sdk)', () => {
  it('runs a tool-using loop with thinking: k tool_use turns, then a text quoting the last result', async () => {
    const messages: MessageParam[] = [];
    const first = stub.requests.length;
    const turns = 10;
    const steps = 2;
    for (let turn = 1; turn <= turns; turn += 1) {
      messages.push({ role: 'user', content: `Turn ${turn}: make the build pass.` });
      for (let call = 1; ; call += 1) {
        const reply = await step(messages, {
          stream: turn % 2 === 1,
          thinking: true,
          headers: { 'x-stub-agent-steps': String(steps) },
        });
        // Echoed back verbatim, thinking signature included, as an agent must.
        messages.push({ role: 'assistant', content: reply.content });
        const uses = toolUses(reply);
        if (uses.length === 0) {
          expect(call).toBe(steps + 1);
          expect(reply.stop_reason).toBe('end_turn');
          const lastResult = (
            messages.at(-2)!.content as Array<{ tool_use_id: string; content: string }>
          )[0]!;
          const expected = `Tool result checksum: ${lastResult.tool_use_id} ${stubChecksum(lastResult.content)}.`;
          expect(reply.content.at(-1)).toMatchObject({ type: 'text', text: expected });
          break;
        }
        expect(reply.stop_reason).toBe('tool_use');
        expect(reply.content.map((block) => block.type)).toEqual(['thinking', 'text', 'tool_use']);
        expect(uses[0]).toMatchObject({ name: 'Read', input: { path: `file-${turn}-${call}.ts` } });
        expect(uses[0]!.id).toMatch(/^toolu_[0-9a-f]{24}$/);
        messages.push({
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: uses[0]!.id, content: `// file-${turn}-${call}.ts\n` },
          ],
        });
      }
    }
    const seen = stub.requests.slice(first);
    expect(seen).toHaveLength(turns * (steps + 1));
    for (const record of seen) {
      expect(record).toMatchObject({
        protocol: 'anthropic',
        status: 200,
        toolNames: ['Read', 'Bash', 'recall'],
      });
      expect(record.messages[0]).toMatchObject({ role: 'system', text: 'You are Claude Code.' });
      expect(toolPairing(record.messages)).toEqual({ unansweredCalls: [], orphanResults: [] });
    }
  });

  it('recalls the newest cleared output named in a tool_result, then quotes what came back', async () => {
    const recalled = [
      { type: 'text' as const, text: 'PASS 412 tests\n' },
      { type: 'text' as const, text: 'FAIL 3' },
    ];
    const messages: MessageParam[] = [
      { role: 'user', content: 'Run the tests.' },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_old', name: 'Bash', input: { command: 'npm test' } }],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_old', content: prunedOutputMarker('toolu_old') },
        ],
      },
      { role: 'assistant', content: 'Three tests fail.' },
      { role: 'user', content: 'Recall the test output: which ones failed?' },
    ];
    const reply = await step(messages, { stream: true });
    const [call] = toolUses(reply);
    expect(call).toMatchObject({ name: 'recall', input: { callId: 'toolu_old' } });
    messages.push({ role: 'assistant', content: reply.content });
    messages.push({
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: call!.id, content: recalled }],
    });
    const answer = await step(messages, { stream: false });
    expect(answer.content).toEqual([
      {
        type: 'text',
        text: `Recalled output checksum: toolu_old ${stubChecksum('PASS 412 tests\nFAIL 3')}.`,
        citations: null,
      },
    ]);
  });

  it('keeps answering a compaction request with a summary even when tools are offered', async () => {
    const prompt = buildSummaryPrompt({ messages: conversation([user('Port the CLI to TypeScript.')]) });
    const message = await client.messages.create({
      model: 'stub-claude',
      max_tokens: 2_000,
      system: prompt.system,
      messages: [{ role: 'user', content: prompt.user }],
      tools: TOOLS,
    });
    expect(message.stop_reason).toBe('end_turn');
    expect(message.content[0]).toMatchObject({
      type: 'text',
      text: expect.stringMatching(/^## Goal\nPort the CLI/),
    });
  });
});
