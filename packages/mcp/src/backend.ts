import type {
  Compaction,
  CompactionWithSteps,
  RecallMedia,
  RecallOutput,
  RecallSearch,
  RevertCompactionResponse,
  Session,
} from '@compactor/contract';

/**
 * What the MCP tools need of Compactor, for one tenant. Two implementations: over the HTTP API
 * (`clientBackend`, the stdio server's, with the key it was started with) and over
 * `@compactor/sessions` (`sessionsBackend`, the API's own `/mcp` mount, as the request's tenant).
 * Each fails with {@link ToolRefusal} for what the caller can read and act on.
 */
export interface McpBackend {
  /** The stored output of one finished tool call of the session. */
  recall(sessionId: string, callId: string): Promise<RecallOutput>;
  /** The image or document a media marker names (`mediaId`), whole. */
  recallMedia(sessionId: string, mediaId: string): Promise<RecallMedia>;
  /** Passages of the history out of the model's view that match `query`, best first. */
  search(sessionId: string, query: string, limit: number | undefined): Promise<RecallSearch>;
  /** The session with its live status. */
  session(sessionId: string): Promise<Session>;
  /** A manual compaction of the session, or the active one (`created: false`). */
  compact(
    sessionId: string,
    instructions: string | undefined,
  ): Promise<{ compaction: Compaction; created: boolean }>;
  /** One compaction, whichever session it belongs to (the tools check that). */
  compaction(compactionId: string): Promise<CompactionWithSteps>;
  /** Undoes the session's latest completed compaction. */
  revert(compactionId: string): Promise<RevertCompactionResponse>;
}

/**
 * A refusal the tool reports to the model as its result (`isError: true`) in these words: a
 * session or compaction that is not found (another tenant's is not found the same way), input
 * the API refuses, a revert that cannot be done, a dependency that is down. Anything else is a
 * fault of ours and is reported without its message.
 */
export class ToolRefusal extends Error {
  override readonly name = 'ToolRefusal';
}
