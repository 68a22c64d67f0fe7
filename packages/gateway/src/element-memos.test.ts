import { anthropicElements, openAIChatElements } from '@compactor/core';
import { describe, expect, it } from 'vitest';
import { ElementMemos } from './element-memos';

const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;
const chat = (n: number, tag: string) => [
  { role: 'system', content: `agent ${tag}` },
  ...Array.from({ length: n }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: `${tag} ${i}` })),
];
const scope = { tenantId: 't1', sessionHeader: undefined };

describe('ElementMemos', () => {
  it('answers what core computes, turn after turn, per conversation and tenant', () => {
    const memos = new ElementMemos();
    for (let turn = 1; turn <= 4; turn++) {
      for (const tag of ['a', 'b']) {
        const messages = copy(chat(turn * 3, tag));
        expect(memos.openAI(scope, messages)).toEqual(openAIChatElements(messages));
        expect(memos.openAI({ ...scope, tenantId: 't2' }, messages)).toEqual(openAIChatElements(messages));
      }
    }
    const system = [{ type: 'text', text: 'be brief' }];
    const messages = chat(5, 'c').slice(1);
    expect(memos.anthropic(scope, system, messages)).toEqual(anthropicElements(system, messages));
    // The same messages without the system element: positions shift, nothing is taken from the memo above.
    expect(memos.anthropic(scope, undefined, copy(messages))).toEqual(anthropicElements(undefined, messages));
  });

  it('refuses bad input as core does, and keeps what it holds within its budget', () => {
    const memos = new ElementMemos(2000);
    expect(() => memos.openAI(scope, 'nope')).toThrow(/messages/);
    expect(() => memos.openAI(scope, [{ role: 'user', content: 'x' }, { role: 'robot' }])).toThrow();
    for (let i = 0; i < 20; i++) memos.openAI(scope, chat(6, `conversation-${i}`));
    expect(memos.size).toBeGreaterThan(0);
    expect(memos.size).toBeLessThanOrEqual(2000);
    // Larger than a quarter of the budget: computed, not kept.
    const before = memos.size;
    memos.openAI(scope, chat(200, 'large'));
    expect(memos.size).toBe(before);
  });
});
