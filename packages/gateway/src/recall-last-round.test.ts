/**
 * A model that keeps calling `recall`: Compactor answers it for `MAX_RECALL_ROUNDS` rounds, then
 * asks one last time with recall still defined (the exchanges hold its calls, and a provider may
 * refuse a call of a tool it is not given) and every tool call forbidden (`tool_choice` none).
 * The model here is the step function each pipeline passes in, answering as a provider would.
 */
import { describe, expect, it } from 'vitest';
import { newSession, useTestSessions } from '@compactor/sessions/testing';
import type { Message, MessageCreateParams, ToolUnion } from '@anthropic-ai/sdk/resources/messages';
import type {
  ChatCompletion,
  ChatCompletionCreateParams,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { ANTHROPIC_RECALL_TOOL, runAnthropicSteps } from './anthropic-steps';
import { runSteps } from './openai-steps';
import { MAX_RECALL_ROUNDS, upstreamTools } from './recall-loop';
import { conversationDeps } from './test-support/conversations';

const t = useTestSessions();
const deps = conversationDeps(t, { now: new Date('2026-03-01T12:00:00Z') });

const READ: ChatCompletionTool = {
  type: 'function',
  function: { name: 'read', parameters: { type: 'object', properties: {} } },
};
const ANTHROPIC_READ: ToolUnion = { name: 'read', input_schema: { type: 'object', properties: {} } };

/** A completion calling recall while tool calls are allowed, answering in text when they are not. */
function recallingCompletion(body: ChatCompletionCreateParams, round: number): ChatCompletion {
  const mayCall = body.tool_choice !== 'none';
  const call = { id: `call_r${round}`, type: 'function' as const };
  return {
    id: `chatcmpl-${round}`,
    object: 'chat.completion',
    created: 0,
    model: body.model,
    choices: [
      {
        index: 0,
        logprobs: null,
        finish_reason: mayCall ? 'tool_calls' : 'stop',
        message: mayCall
          ? {
              role: 'assistant',
              content: null,
              refusal: null,
              tool_calls: [{ ...call, function: { name: 'recall', arguments: '{"callId":"call_gone"}' } }],
            }
          : { role: 'assistant', content: 'done recalling', refusal: null },
      },
    ],
  };
}

function recallingMessage(body: MessageCreateParams, round: number): Message {
  const mayCall = body.tool_choice?.type !== 'none';
  return {
    id: `msg_${round}`,
    type: 'message',
    role: 'assistant',
    model: body.model,
    content: mayCall
      ? [{ type: 'tool_use', id: `toolu_r${round}`, name: 'recall', input: { callId: 'call_gone' } }]
      : [{ type: 'text', text: 'done recalling', citations: null }],
    stop_reason: mayCall ? 'tool_use' : 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 10, output_tokens: 2 },
  } as unknown as Message;
}

describe('the last recall round', () => {
  it('Chat Completions: recall stays defined and tool_choice is "none"', async () => {
    const session = await newSession(t, 't-last-openai', 's1');
    const { tools, recallOffered } = upstreamTools([READ], true);
    const sent: ChatCompletionCreateParams[] = [];
    const { result } = await runSteps(
      deps,
      {
        session,
        clientBody: { model: 'gpt-4o', messages: [], tools: [READ], tool_choice: 'auto' },
        context: { messages: [{ role: 'user', content: 'go' }], fit: 'view' },
        toolsWithRecall: tools,
        recallOffered,
        waitMs: 0,
      },
      async (body, _context, offersRecall) => {
        sent.push(body);
        const completion = recallingCompletion(body, sent.length);
        const calls = offersRecall ? (completion.choices[0]!.message.tool_calls ?? []) : [];
        return { completion, recallCalls: calls.filter((c) => c.type === 'function') };
      },
    );

    expect(sent).toHaveLength(MAX_RECALL_ROUNDS + 1);
    for (const body of sent)
      expect(body.tools?.map((tool) => (tool.type === 'function' ? tool.function.name : ''))).toEqual([
        'read',
        'recall',
      ]);
    expect(sent.map((body) => body.tool_choice)).toEqual([...Array(MAX_RECALL_ROUNDS).fill('auto'), 'none']);
    // The last request still carries every recall call and its answer, paired.
    const last = sent.at(-1)!.messages;
    expect(last.filter((m) => m.role === 'tool')).toHaveLength(MAX_RECALL_ROUNDS);
    expect(result.completion.choices[0]!.message.content).toBe('done recalling');
  });

  it('Messages: recall stays defined and tool_choice is { type: "none" }', async () => {
    const session = await newSession(t, 't-last-anthropic', 's1');
    const sent: MessageCreateParams[] = [];
    const { result } = await runAnthropicSteps(
      deps,
      {
        session,
        clientBody: { model: 'claude-sonnet-4-5', max_tokens: 512, messages: [], tools: [ANTHROPIC_READ] },
        context: {
          system: undefined,
          messages: [{ role: 'user', content: [{ type: 'text', text: 'go' }] }],
          fit: 'view',
        },
        toolsWithRecall: [ANTHROPIC_READ, ANTHROPIC_RECALL_TOOL],
        recallOffered: true,
        waitMs: 0,
      },
      async (body, _context, offersRecall) => {
        sent.push(body);
        const message = recallingMessage(body, sent.length);
        const calls = offersRecall ? message.content.filter((block) => block.type === 'tool_use') : [];
        return { message, recallCalls: calls };
      },
    );

    expect(sent).toHaveLength(MAX_RECALL_ROUNDS + 1);
    for (const body of sent)
      expect(body.tools?.map((tool) => ('name' in tool ? tool.name : ''))).toEqual(['read', 'recall']);
    expect(sent.map((body) => body.tool_choice)).toEqual([
      ...Array(MAX_RECALL_ROUNDS).fill(undefined),
      { type: 'none' },
    ]);
    const toolUses = sent
      .at(-1)!
      .messages.flatMap((m) => (Array.isArray(m.content) ? m.content : []))
      .filter((block) => block.type === 'tool_use');
    expect(toolUses).toHaveLength(MAX_RECALL_ROUNDS);
    expect(result.message.content).toEqual([{ type: 'text', text: 'done recalling', citations: null }]);
  });
});
