/**
 * `GET /v1/sessions/:id/tasks`: the session's sub-agents and background tasks (docs/TASKS.md),
 * the registry the served context's "tasks" block is rendered from after a compaction.
 */
import { z } from 'zod';
import { TOOL_STATUS } from './vocabulary.js';

/** The most tasks a page returns; and how many when `limit` is left out. */
export const MAX_TASKS_LIMIT = 500;
export const DEFAULT_TASKS_LIMIT = 100;

export const TasksQuery = z
  .object({
    limit: z.coerce.number().int().min(1).max(MAX_TASKS_LIMIT).default(DEFAULT_TASKS_LIMIT),
    cursor: z.string().min(1).max(400).optional().describe("The previous page's `nextCursor`"),
  })
  .strict();

/** One task: a tool call that is a sub-agent or a background task. */
export const TaskOut = z
  .object({
    callId: z.string().describe("The call's id: the task's id"),
    tool: z.string(),
    status: z.enum(TOOL_STATUS),
    asked: z.string().describe('What it was asked: an excerpt of the call input, at most 300 characters'),
    messageId: z.string().describe('The message that holds the call'),
    seq: z.number().int(),
    startedAt: z.string(),
    finishedAt: z.string().nullable(),
    outcome: z
      .string()
      .nullable()
      .describe('An excerpt of the result or error once finished (at most 300 characters)'),
    deliveredSeq: z
      .number()
      .int()
      .nullable()
      .describe(
        'The seq of the `<task-notification>` message that delivered a result landing after a compaction covered the call',
      ),
    duplicateOf: z
      .string()
      .nullable()
      .describe(
        'Set on a running task whose tool and input repeat an older running task: that task (a duplicate dispatch)',
      ),
  })
  .meta({ id: 'Task' });

const taskExample = {
  callId: 'toolu_01A',
  tool: 'Task',
  status: 'running' as const,
  asked: 'description: Port the lexer · prompt: Port src/lexer.ts to the new token API',
  messageId: 'm12',
  seq: 12,
  startedAt: '2026-01-05T10:00:00.000Z',
  finishedAt: null,
  outcome: null,
  deliveredSeq: null,
  duplicateOf: null,
};

/** Running tasks and duplicate dispatches among them: the status's `tasks`. */
export const TaskCounts = z.object({
  running: z.number().int(),
  duplicates: z.number().int().describe('Running tasks whose tool and input repeat an older running task'),
});

export const TasksResponse = z
  .object({
    tasks: z.array(TaskOut).describe('Newest call first'),
    running: z.number().int(),
    duplicates: z.number().int(),
    nextCursor: z.string().nullable(),
  })
  .meta({ examples: [{ tasks: [taskExample], running: 1, duplicates: 0, nextCursor: null }] });
