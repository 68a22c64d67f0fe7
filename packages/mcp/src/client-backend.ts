import { CompactorApiError, type CompactorClient } from '@compactor/client';
import { ToolRefusal, type McpBackend } from './backend';

/**
 * The tools over the HTTP API (the stdio server's backend): every call is one request with the
 * client's key, so the API decides tenancy exactly as for any other client. The API's refusals
 * (404 not found, 409 a revert that cannot be done, 400, 401, 429, 503) reach the model in the
 * API's words; an API that cannot be reached is said so, with where it was looked for.
 */
export function clientBackend(client: CompactorClient, baseUrl: string): McpBackend {
  const call = async <T>(request: () => Promise<T>): Promise<T> => {
    try {
      return await request();
    } catch (error) {
      if (error instanceof CompactorApiError) throw new ToolRefusal(refusalText(error));
      if (error instanceof TypeError) {
        // fetch's network failure: the reason (ECONNREFUSED, ENOTFOUND) is in its cause.
        const cause = (error.cause as { code?: unknown } | undefined)?.code;
        const reason = typeof cause === 'string' ? ` (${cause})` : '';
        throw new ToolRefusal(`the Compactor API at ${baseUrl} could not be reached${reason}`);
      }
      throw error;
    }
  };
  return {
    recall: (sessionId, callId) => call(() => client.recall(sessionId, { callId })),
    recallMedia: (sessionId, mediaId) => call(() => client.recall(sessionId, { mediaId })),
    search: (sessionId, query, limit) =>
      call(() => client.recall(sessionId, limit === undefined ? { q: query } : { q: query, limit })),
    session: (sessionId) => call(() => client.getSession(sessionId)),
    compact: (sessionId, instructions) =>
      call(() => client.requestCompaction(sessionId, instructions === undefined ? {} : { instructions })),
    compaction: (compactionId) => call(() => client.getCompaction(compactionId)),
    revert: (compactionId) => call(() => client.revertCompaction(compactionId)),
  };
}

/** The API's message; a 409 adds its reason (`not_latest`, `compaction_active`, …). */
function refusalText(error: CompactorApiError): string {
  const reason = (error.details as { reason?: unknown } | undefined)?.reason;
  return typeof reason === 'string' ? `${error.message} (${reason})` : error.message;
}
