import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { SessionParams, TasksQuery, TasksResponse } from '@compactor/contract';
import { sessionTasks } from '@compactor/sessions';
import type { ApiResources } from '../resources';
import { commonErrors } from '../http/route-errors';

/** `GET /v1/sessions/:id/tasks`: the session's sub-agents and background tasks (`sessionTasks`). */
export function taskRoutes(resources: ApiResources): FastifyPluginAsyncZod {
  return async (app) => {
    app.get(
      '/v1/sessions/:id/tasks',
      {
        schema: {
          tags: ['context'],
          summary: "The session's sub-agents and background tasks, newest call first",
          description:
            "A tool call is a task when its tool is one of the policy's `tasks.tools` (defaults: Claude Code `Task`, " +
            '`Agent` and `Bash` with `run_in_background`, Codex `spawn_agent`, OpenCode `task` and spawn-like tools) ' +
            'or when its message lists its id in `metadata.taskCallIds`. Each is recorded when its call is appended ' +
            'and when a PATCH reports its result. After a compaction the context carries a `<tasks>` block ' +
            'rendered from these records (running tasks first, then recently finished ones; 500 at most), and a ' +
            'result PATCHed after the compaction covered its call is delivered as a `<task-notification>` message. ' +
            '`duplicateOf` marks a running task whose tool and input repeat an older running one. `limit` tasks a ' +
            "page (default 100, at most 500) from `cursor` (the previous page's `nextCursor`).",
          params: SessionParams,
          querystring: TasksQuery,
          response: { 200: TasksResponse, ...commonErrors },
        },
      },
      async (request) =>
        sessionTasks(
          resources.db,
          { tenantId: request.tenantId, id: request.params.id },
          { limit: request.query.limit, cursor: request.query.cursor ?? null },
        ),
    );
  };
}
