import { describe, expect, it } from 'vitest';
import type { MessageInput } from '@compactor/db';
import { probeTasks } from './tasks';

const call = (
  callId: string,
  tool: string,
  status: 'running' | 'completed',
  input: unknown = { prompt: 'p' },
) => ({
  type: 'tool' as const,
  callId,
  tool,
  status,
  input,
  ...(status === 'completed' ? { output: 'ok' } : {}),
});
const messages: MessageInput[] = [
  { role: 'user', parts: [{ type: 'text', text: 'go' }] },
  {
    role: 'assistant',
    parts: [
      call('a', 'Task', 'running'),
      call('b', 'Agent', 'running'),
      call('c', 'Task', 'completed'),
      call('d', 'Bash', 'running', { command: 'npm run dev', run_in_background: true }),
      call('e', 'read', 'running'),
    ],
  } as MessageInput,
  { role: 'assistant', parts: [call('f', 'Task', 'running')] } as MessageInput,
];

describe('probeTasks', () => {
  it('counts compacted tasks as alive, delivered late, finished or lost', () => {
    const context = [
      {
        role: 'user',
        summary: true,
        parts: [{ type: 'text', text: '<tasks>\n- [task a] Task, running\n</tasks>' }],
      },
      {
        role: 'user',
        parts: [
          { type: 'text', text: '<task-notification>\n[task b] Agent completed\n</task-notification>' },
        ],
      },
    ];
    expect(probeTasks({ messages, compactedCount: 2, context })).toEqual({
      compacted: 4,
      alive: 1,
      deliveredLate: 1,
      finished: 1,
      lost: 1, // the background shell d
    });
    expect(probeTasks({ messages, compactedCount: 0, context }).compacted).toBe(0);
  });
});
