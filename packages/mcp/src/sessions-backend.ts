import { ConflictError, isDatabaseUnavailable, NotFoundError } from '@compactor/db';
import {
  CallOutputPurged,
  compactionDetail,
  Conflict,
  getSession,
  InvalidInput,
  NotFound,
  recall,
  requestManualCompaction,
  revertCompaction,
  TooManyRequests,
  type SessionResources,
  type TenantLimits,
} from '@compactor/sessions';
import { ToolRefusal, type McpBackend } from './backend';

/**
 * The tools over `@compactor/sessions` as `tenantId` (the API's `/mcp` mount: the tenant its
 * key authenticated). The same functions the API's routes call, so a tool does exactly what the
 * route does, with the same refusals in the same words as the HTTP backend reports them.
 */
export function sessionsBackend(
  resources: SessionResources,
  limits: TenantLimits,
  tenantId: string,
): McpBackend {
  const target = (id: string) => ({ tenantId, id });
  return {
    recall: async (sessionId, callId) => {
      const answer = await refusing(() => recall(resources.db, target(sessionId), { callId }));
      if (answer.kind !== 'call') throw new Error('recall by call id answered a search');
      return answer;
    },
    recallMedia: async (sessionId, mediaId) => {
      const answer = await refusing(() => recall(resources.db, target(sessionId), { mediaId }));
      if (answer.kind !== 'media') throw new Error('recall by media id answered something else');
      return answer;
    },
    search: async (sessionId, query, limit) => {
      const q = limit === undefined ? { q: query } : { q: query, limit };
      const answer = await refusing(() => recall(resources.db, target(sessionId), q));
      if (answer.kind !== 'search') throw new Error('recall by query answered a call');
      return answer;
    },
    session: (sessionId) => refusing(() => getSession(resources.db, target(sessionId))),
    compact: (sessionId, instructions) =>
      refusing(() =>
        requestManualCompaction(
          resources,
          limits,
          target(sessionId),
          instructions === undefined ? {} : { instructions },
          undefined,
        ),
      ),
    compaction: (compactionId) => refusing(() => compactionDetail(resources.db, tenantId, compactionId)),
    revert: (compactionId) => refusing(() => revertCompaction(resources, tenantId, compactionId)),
  };
}

/** Runs a session operation; its refusals become {@link ToolRefusal}s worded as the API words them. */
async function refusing<T>(operation: () => Promise<T>): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    const text = refusalText(error);
    if (text === null) throw error;
    throw new ToolRefusal(text);
  }
}

function refusalText(error: unknown): string | null {
  if (
    error instanceof NotFound ||
    error instanceof InvalidInput ||
    error instanceof Conflict ||
    error instanceof TooManyRequests ||
    error instanceof CallOutputPurged
  ) {
    return error.message;
  }
  if (error instanceof NotFoundError) return error.message;
  if (error instanceof ConflictError) {
    const reason = error.details.reason;
    return typeof reason === 'string' ? `${error.message} (${reason})` : error.message;
  }
  // The words of the API's 503, never the driver's message (it can quote the statement).
  if (isDatabaseUnavailable(error)) return 'the database is unavailable; retry later';
  return null;
}
