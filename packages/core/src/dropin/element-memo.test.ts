import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { anthropicElements, anthropicMessageDraft } from './anthropic-elements';
import { chainElementsReusing, jsonEqual, type ElementMemo } from './element-memo';
import { openAIChatElements, openAIMessageDraft } from './openai-elements';

const draft = (message: unknown, index: number) => openAIMessageDraft(message, ['messages', index], index);
const copy = <T>(value: T): T => JSON.parse(JSON.stringify(value)) as T;

const conversation = (turns: number, tag = 'a') => [
  { role: 'system', content: `agent ${tag}` },
  ...Array.from({ length: turns }, (_, i) => [
    { role: 'user', content: `task ${i}` },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: `c${i}`, type: 'function', function: { name: 'read', arguments: `{"n":${i}}` } }],
    },
    { role: 'tool', tool_call_id: `c${i}`, content: `out ${i}` },
  ]).flat(),
];

function reusing(messages: unknown[], memo: ElementMemo | null) {
  return chainElementsReusing(messages, draft, memo);
}

describe('chainElementsReusing', () => {
  it('gives the elements a full computation gives, reusing only the equal prefix', () => {
    const first = conversation(3);
    const start = reusing(first, null);
    expect(start.elements).toEqual(openAIChatElements(first));
    expect(start.reused).toBe(0);

    // The next turn: the same history (parsed anew) and two messages more.
    const next = [...copy(first), { role: 'assistant', content: 'done' }, { role: 'user', content: 'more' }];
    const extended = reusing(next, start.memo);
    expect(extended.reused).toBe(first.length);
    expect(extended.elements).toEqual(openAIChatElements(next));

    // An edit in the middle: reused up to it, everything after drafted again.
    const edited = copy(next);
    (edited[4] as { content: string }).content = 'task 1, edited';
    const afterEdit = reusing(edited, extended.memo);
    expect(afterEdit.reused).toBe(4);
    expect(afterEdit.elements).toEqual(openAIChatElements(edited));

    // A cut history: shorter than the memo.
    const cut = copy(first).slice(0, 5);
    expect(reusing(cut, afterEdit.memo).elements).toEqual(openAIChatElements(cut));
  });

  it('reads key order and absent fields as the full computation does (equal parsed JSON only)', () => {
    const first = conversation(1);
    const { memo } = reusing(first, null);
    const reordered = copy(first).map((m) => Object.fromEntries(Object.entries(m).reverse()));
    const result = reusing(reordered, memo);
    expect(result.reused).toBe(first.length);
    expect(result.elements).toEqual(openAIChatElements(reordered));
    // `content: null` against no content: unequal JSON, drafted again, same canonical form.
    const withoutNull = copy(first).map((m) => (m.content === null ? { ...m, content: undefined } : m));
    const again = reusing(withoutNull, memo);
    expect(again.reused).toBe(2);
    expect(again.elements.map((e) => e.hash)).toEqual(openAIChatElements(withoutNull).map((e) => e.hash));
  });

  it('works for any drafter: Anthropic messages', () => {
    const messages = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [{ type: 'text', text: 'hello' }] },
      { role: 'user', content: [{ type: 'text', text: 'again', cache_control: { type: 'ephemeral' } }] },
    ];
    const anthropic = (message: unknown, index: number) =>
      anthropicMessageDraft(message, ['messages', index]);
    const { memo } = chainElementsReusing(messages.slice(0, 2), anthropic, null);
    const result = chainElementsReusing(copy(messages), anthropic, memo);
    expect(result.reused).toBe(2);
    expect(result.elements).toEqual(anthropicElements(undefined, messages));
  });
});

describe('jsonEqual', () => {
  it('is equality of JSON values, key order aside', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        expect(jsonEqual(a, copy(a))).toBe(true);
        const sameText = JSON.stringify(a) === JSON.stringify(b);
        if (sameText) expect(jsonEqual(a, b)).toBe(true);
      }),
      { numRuns: 50 },
    );
    expect(jsonEqual({ a: 1, b: [1, '2'] }, { b: [1, '2'], a: 1 })).toBe(true);
    expect(jsonEqual({ a: 1 }, { a: 1, b: null })).toBe(false);
    expect(jsonEqual([1, 2], { 0: 1, 1: 2 })).toBe(false);
    expect(jsonEqual('1', 1)).toBe(false);
    expect(jsonEqual(null, {})).toBe(false);
  });
});
