/**
 * The pure contract the gateway relies on, over a whole agent loop as the official SDKs' types
 * shape it: each request extends the chain stored so far (the stored answer's echo included), and
 * what it adds is exactly the client's new messages, tool results written onto the stored calls.
 */
import type { ContentBlock, MessageParam } from '@anthropic-ai/sdk/resources/messages/messages';
import type {
  ChatCompletion,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions/completions';
import { describe, expect, it } from 'vitest';
import { anthropicAnswer } from './anthropic-answer';
import { anthropicElements } from './anthropic-elements';
import type { DropInAnswer } from './answer';
import { chainHash } from './chain-hash';
import type { ConversationElement } from './elements';
import { openAIAnswer } from './openai-answer';
import { openAIChatElements } from './openai-elements';
import { suffixWrites } from './suffix-writes';

const TURNS = 30;

/** What the gateway keeps per request: the chain it stored, checked against the next request. */
function follow(
  turns: number,
  request: () => ConversationElement[],
  answer: (turn: number) => { answer: DropInAnswer; callIds: string[] },
): void {
  const stored: string[] = [];
  let expectedPatches: string[] = [];
  for (let turn = 0; turn < turns; turn++) {
    const elements = request();
    expect(elements.slice(0, stored.length).map((e) => e.hash)).toEqual(stored);
    const { appends, patches } = suffixWrites(elements, stored.length);
    expect(patches.map((p) => p.callId)).toEqual(expectedPatches);
    // The client's new messages only: its copy of our answer is already stored.
    expect(appends.every((m) => m.role !== 'assistant')).toBe(true);
    stored.splice(0, stored.length, ...elements.map((e) => e.hash));
    const next = answer(turn);
    stored.push(chainHash(stored[stored.length - 1] ?? null, next.answer.echo));
    expectedPatches = next.callIds;
  }
}

describe('a Chat Completions agent loop', () => {
  it('extends one chain turn after turn, results patched onto the stored calls', () => {
    const messages: ChatCompletionMessageParam[] = [
      { role: 'system', content: 'You are a coding agent.' },
      { role: 'user', content: 'Fix the failing tests' },
    ];
    follow(
      TURNS,
      () => openAIChatElements(JSON.parse(JSON.stringify(messages))),
      (turn) => {
        // Calls numbered per turn, as some providers do; every third turn ends with a question.
        const ask = turn % 3 === 2;
        const message: ChatCompletion['choices'][number]['message'] = ask
          ? { role: 'assistant', content: `Turn ${turn}: which file next?`, refusal: null }
          : {
              role: 'assistant',
              content: turn % 2 === 0 ? null : `Reading, turn ${turn}.`,
              refusal: null,
              annotations: [],
              tool_calls: [0, 1].map((i) => ({
                id: `call_${i}`,
                type: 'function' as const,
                function: { name: 'read', arguments: JSON.stringify({ path: `src/${turn}-${i}.ts` }) },
              })),
            };
        const completion: ChatCompletion = {
          id: `chatcmpl-${turn}`,
          object: 'chat.completion',
          created: 0,
          model: 'gpt-4o',
          choices: [{ index: 0, logprobs: null, finish_reason: ask ? 'stop' : 'tool_calls', message }],
        };
        const answer = openAIAnswer(completion);
        messages.push(message);
        const callIds = (message.tool_calls ?? []).map((call) => call.id);
        for (const id of callIds)
          messages.push({ role: 'tool', tool_call_id: id, content: `contents ${turn} ${id}` });
        if (ask) messages.push({ role: 'user', content: `src/${turn}.ts` });
        return { answer, callIds };
      },
    );
  });
});

describe('an Anthropic Messages agent loop', () => {
  it('extends one chain turn after turn, thinking and all', () => {
    const system = [
      {
        type: 'text' as const,
        text: 'You are a coding agent.',
        cache_control: { type: 'ephemeral' as const },
      },
    ];
    const messages: MessageParam[] = [{ role: 'user', content: 'Fix the failing tests' }];
    follow(
      TURNS,
      () => {
        // Agents move their cache breakpoint to the newest message every turn.
        const moved = messages.map((m, i) =>
          i === messages.length - 1 && Array.isArray(m.content)
            ? { ...m, content: m.content.map((b) => ({ ...b, cache_control: { type: 'ephemeral' } })) }
            : m,
        );
        return anthropicElements(system, JSON.parse(JSON.stringify(moved)));
      },
      (turn) => {
        const ask = turn % 3 === 2;
        const content: ContentBlock[] = [
          { type: 'thinking', thinking: `Plan for turn ${turn}.`, signature: `sig-${turn}` },
          { type: 'text', text: ask ? 'Which file next?' : 'Reading.', citations: null },
          ...(ask
            ? []
            : [0, 1].map((i) => ({
                type: 'tool_use' as const,
                id: `toolu_${turn}_${i}`,
                name: 'read',
                input: { path: `src/${turn}-${i}.ts` },
                caller: { type: 'direct' as const },
              }))),
        ];
        const answer = anthropicAnswer({
          role: 'assistant',
          content,
          stop_reason: ask ? 'end_turn' : 'tool_use',
          usage: { input_tokens: 10, output_tokens: 5 },
        });
        messages.push({ role: 'assistant', content });
        const callIds = content.flatMap((b) => (b.type === 'tool_use' ? [b.id] : []));
        messages.push({
          role: 'user',
          content: ask
            ? [{ type: 'text', text: `src/${turn}.ts` }]
            : callIds.map((id) => ({
                type: 'tool_result' as const,
                tool_use_id: id,
                content: `contents of ${id}`,
              })),
        });
        return { answer, callIds };
      },
    );
  });
});
