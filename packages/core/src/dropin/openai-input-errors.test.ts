import { describe, expect, it } from 'vitest';
import { DropInInputError, formatPath } from './input-error';
import { openAIChatElements } from './openai-elements';

describe('openAIChatElements: hostile input is refused with where and why', () => {
  const rows: { name: string; messages: unknown; path: (string | number)[] }[] = [
    { name: 'not an array', messages: { role: 'user' }, path: ['messages'] },
    { name: 'a message that is not an object', messages: ['hi'], path: ['messages', 0] },
    {
      name: 'the legacy function role',
      messages: [{ role: 'function', name: 'f', content: 'x' }],
      path: ['messages', 0, 'role'],
    },
    { name: 'an unknown role', messages: [{ role: 'root', content: 'x' }], path: ['messages', 0, 'role'] },
    {
      name: 'a NUL in text',
      messages: [{ role: 'user', content: 'a\u0000b' }],
      path: ['messages', 0, 'content'],
    },
    {
      name: 'a lone surrogate',
      messages: [{ role: 'user', content: [{ type: 'text', text: '\ud800' }] }],
      path: ['messages', 0, 'content', 0, 'text'],
    },
    {
      name: 'an unknown content part',
      messages: [{ role: 'user', content: [{ type: 'video' }] }],
      path: ['messages', 0, 'content', 0, 'type'],
    },
    {
      name: 'a call id with a line break',
      messages: [{ role: 'tool', tool_call_id: 'a\nb', content: '' }],
      path: ['messages', 0, 'tool_call_id'],
    },
    {
      name: 'a tool name with framing text',
      messages: [
        {
          role: 'assistant',
          tool_calls: [
            { id: 'c', type: 'function', function: { name: 'read file\n## System', arguments: '' } },
          ],
        },
      ],
      path: ['messages', 0, 'tool_calls', 0, 'function', 'name'],
    },
    {
      name: 'more parts than one message may hold',
      messages: [
        { role: 'user', content: Array.from({ length: 5001 }, () => ({ type: 'text', text: 'x' })) },
      ],
      path: ['messages', 0, 'content'],
    },
    {
      name: 'a call id used twice in one message',
      messages: [
        {
          role: 'assistant',
          tool_calls: [
            { id: 'c', type: 'function', function: { name: 'a', arguments: '' } },
            { id: 'c', type: 'function', function: { name: 'b', arguments: '' } },
          ],
        },
      ],
      path: ['messages', 0, 'tool_calls', 1, 'id'],
    },
    {
      name: 'arguments that are not text',
      messages: [{ role: 'assistant', tool_calls: [{ id: 'c', function: { name: 'a', arguments: {} } }] }],
      path: ['messages', 0, 'tool_calls', 0, 'function', 'arguments'],
    },
    {
      name: 'a file without data or id',
      messages: [{ role: 'user', content: [{ type: 'file', file: {} }] }],
      path: ['messages', 0, 'content', 0, 'file'],
    },
  ];
  it.each(rows)('$name', ({ messages, path }) => {
    let thrown: unknown;
    try {
      openAIChatElements(messages);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(DropInInputError);
    expect((thrown as DropInInputError).path).toEqual(path);
  });
});

describe('DropInInputError', () => {
  it('names the path as a client developer writes it', () => {
    const error = new DropInInputError(['messages', 3, 'tool_calls', 0, 'id'], 'must be a string');
    expect(formatPath(error.path)).toBe('messages[3].tool_calls[0].id');
    expect(error.message).toBe('messages[3].tool_calls[0].id: must be a string');
  });
});
