/**
 * The conversation store under the Messages protocol: the `system` field is the chain's first
 * element, `tool_result` blocks land on the stored `tool_use` calls, a thinking block's answer is
 * echoed back verbatim and extends the chain, and a refused result names the client's message.
 */
import { describe, expect, it } from 'vitest';
import { anthropicAnswer, anthropicElements, DropInInputError } from '@compactor/core';
import { useTestSessions } from '@compactor/sessions/testing';
import { recordAnswer, syncConversation, type ConversationRequest } from './conversation';
import { conversationDeps, storedMessages } from './test-support/conversations';

const t = useTestSessions();
const deps = conversationDeps(t, { now: new Date('2026-03-01T12:00:00Z') });

type Block = Record<string, unknown>;
type Message = { role: 'user' | 'assistant'; content: string | Block[] };

const request = (tenantId: string, messages: Message[]): ConversationRequest => ({
  tenantId,
  protocol: 'anthropic',
  sessionHeader: undefined,
  model: 'claude-sonnet-4-5',
  overrides: { contextWindow: 8_000 },
  elements: anthropicElements('You are a coding agent.', messages),
});

/** A Messages response whose content is `content`, as the upstream sends it. */
const response = (content: Block[]) => ({
  id: 'msg_test',
  type: 'message',
  role: 'assistant',
  model: 'claude-sonnet-4-5',
  content,
  stop_reason: content.some((b) => b['type'] === 'tool_use') ? 'tool_use' : 'end_turn',
  stop_sequence: null,
  usage: { input_tokens: 90, output_tokens: 12, cache_read_input_tokens: 30 },
});

async function answer(tenantId: string, messages: Message[], content: Block[]) {
  const synced = await syncConversation(deps, request(tenantId, messages));
  const body = response(content);
  await recordAnswer(deps, synced, anthropicAnswer(body), { protocol: 'anthropic', body });
  return synced;
}

describe('syncConversation (Anthropic Messages)', () => {
  it('extends the chain through tool_use, tool_result and a signed thinking block', async () => {
    const thinking = { type: 'thinking', thinking: 'Look first.', signature: 'sig-1' };
    const call = { type: 'tool_use', id: 'toolu_1', name: 'read', input: { path: 'a.ts' } };
    const messages: Message[] = [{ role: 'user', content: 'fix a.ts' }];
    const created = await answer('t-anthropic', messages, [thinking, call]);
    expect(created).toMatchObject({ outcome: 'created', answerPosition: 2 });

    // Claude Code moves its cache breakpoints every turn: cache_control changes no hash.
    messages.push(
      { role: 'assistant', content: [thinking, call] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'export {}' },
          { type: 'text', text: 'and?', cache_control: { type: 'ephemeral' } },
        ],
      },
    );
    const next = await answer('t-anthropic', messages, [{ type: 'text', text: 'Fixed.' }]);
    expect(next).toMatchObject({ outcome: 'extended', session: created.session, answerPosition: 4 });

    const stored = await storedMessages(t, 't-anthropic', created.session.id);
    expect(stored.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user', 'assistant']);
    expect(stored[2]?.parts).toContainEqual({
      type: 'tool',
      callId: 'toolu_1',
      status: 'completed',
      output: 'export {}',
    });
    expect(stored[3]?.parts).toEqual([{ type: 'text', text: 'and?' }]);
  });

  it("names the client's message of a result for an unknown call (the system field is no message)", async () => {
    const messages: Message[] = [{ role: 'user', content: 'hi' }];
    await answer('t-anthropic-bad', messages, [{ type: 'text', text: 'hello' }]);
    messages.push(
      { role: 'assistant', content: [{ type: 'text', text: 'hello' }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_unknown', content: 'x' }] },
    );
    const refused = await syncConversation(deps, request('t-anthropic-bad', messages)).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(DropInInputError);
    expect((refused as DropInInputError).path).toEqual(['messages', 2]);
  });
});
