import { describe, expect, it } from 'vitest';
import { anthropicElements } from './anthropic-elements';
import { DropInInputError } from './input-error';

describe('anthropicElements: hostile input is refused with where and why', () => {
  const rows: { name: string; system?: unknown; messages: unknown; path: (string | number)[] }[] = [
    { name: 'messages not an array', messages: 'hi', path: ['messages'] },
    {
      name: 'a NUL in string content',
      messages: [{ role: 'user', content: 'a\u0000' }],
      path: ['messages', 0, 'content'],
    },
    {
      name: 'a system block that is not text',
      system: [{ type: 'image' }],
      messages: [],
      path: ['system', 0, 'type'],
    },
    { name: 'an unknown role', messages: [{ role: 'tool', content: 'x' }], path: ['messages', 0, 'role'] },
    {
      name: 'a block without a type',
      messages: [{ role: 'user', content: [{ text: 'x' }] }],
      path: ['messages', 0, 'content', 0, 'type'],
    },
    {
      name: 'tool_use on a user message',
      messages: [{ role: 'user', content: [{ type: 'tool_use', id: 't', name: 'a', input: {} }] }],
      path: ['messages', 0, 'content', 0, 'type'],
    },
    {
      name: 'tool_result on an assistant message',
      messages: [{ role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 't' }] }],
      path: ['messages', 0, 'content', 0, 'type'],
    },
    {
      name: 'a tool name with spaces',
      messages: [
        { role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'read file', input: {} }] },
      ],
      path: ['messages', 0, 'content', 0, 'name'],
    },
    {
      name: 'a tool_use id with a tab',
      messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 'a\tb', name: 'a', input: {} }] }],
      path: ['messages', 0, 'content', 0, 'id'],
    },
    {
      name: 'an input that is not an object',
      messages: [{ role: 'assistant', content: [{ type: 'tool_use', id: 't', name: 'a', input: [1] }] }],
      path: ['messages', 0, 'content', 0, 'input'],
    },
    {
      name: 'an input nested 100 deep',
      messages: [
        {
          role: 'assistant',
          content: [
            {
              type: 'tool_use',
              id: 't',
              name: 'a',
              input: { a: JSON.parse('['.repeat(100) + ']'.repeat(100)) },
            },
          ],
        },
      ],
      path: ['messages', 0, 'content', 0, 'input', 'a', ...Array<number>(63).fill(0)],
    },
    {
      name: 'a NUL in a key of a kept block',
      messages: [{ role: 'assistant', content: [{ type: 'server_tool_use', 'x\u0000': 1 }] }],
      path: ['messages', 0, 'content', 0, 'x\u0000'],
    },
    {
      name: 'an image source of an unknown kind',
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'ftp' } }] }],
      path: ['messages', 0, 'content', 0, 'source', 'type'],
    },
    {
      name: 'a kept block that would nest past 64 levels inside the stored metadata',
      messages: [
        {
          role: 'assistant',
          content: [{ type: 'server_tool_use', input: JSON.parse('['.repeat(60) + ']'.repeat(60)) }],
        },
      ],
      path: ['messages', 0, 'content', 0, 'input', ...Array<number>(59).fill(0)],
    },
    {
      name: 'more blocks than one message may hold',
      messages: [
        { role: 'user', content: Array.from({ length: 5001 }, () => ({ type: 'text', text: 'x' })) },
      ],
      path: ['messages', 0, 'content'],
    },
    {
      name: 'a tool_use id used twice in one message',
      messages: [
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: 't', name: 'a', input: {} },
            { type: 'tool_use', id: 't', name: 'b', input: {} },
          ],
        },
      ],
      path: ['messages', 0, 'content', 1, 'id'],
    },
  ];
  it.each(rows)('$name', ({ system, messages, path }) => {
    let thrown: unknown;
    try {
      anthropicElements(system, messages);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(DropInInputError);
    expect((thrown as DropInInputError).path).toEqual(path);
  });
});
