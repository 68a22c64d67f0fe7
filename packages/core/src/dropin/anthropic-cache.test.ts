import { describe, expect, it } from 'vitest';
import { withCacheBreakpoints } from './anthropic-cache';
import type { AnthropicMessageParam } from './anthropic-render';

const conversation: AnthropicMessageParam[] = [
  { role: 'user', content: [{ type: 'text', text: 'one' }] },
  { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'read', input: {} }] },
  {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'a', content: 'x' },
      { type: 'text', text: 'two' },
    ],
  },
  { role: 'assistant', content: [{ type: 'text', text: 'ok' }] },
  { role: 'user', content: [{ type: 'text', text: 'three' }] },
];

const marked = (messages: AnthropicMessageParam[]) =>
  messages.flatMap((m, i) => m.content.flatMap((b, j) => ('cache_control' in b ? [[i, j]] : [])));

describe('withCacheBreakpoints', () => {
  it.each([
    [0, []],
    [1, [[4, 0]]],
    [
      2,
      [
        [2, 1],
        [4, 0],
      ],
    ],
    [
      9,
      [
        [0, 0],
        [2, 1],
        [4, 0],
      ],
    ],
  ])('%i breakpoints mark the last blocks of the newest user messages', (count, expected) => {
    expect(marked(withCacheBreakpoints(conversation, count))).toEqual(expected);
  });

  it('leaves the input unchanged and never marks thinking', () => {
    const thinkingLast: AnthropicMessageParam[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'q' },
          { type: 'redacted_thinking', data: 'd' },
        ],
      },
    ];
    expect(marked(withCacheBreakpoints(thinkingLast, 1))).toEqual([[0, 0]]);
    expect(marked(thinkingLast)).toEqual([]);
    withCacheBreakpoints(conversation, 2);
    expect(marked(conversation)).toEqual([]);
  });
});
