/**
 * The conversation store's interface with the drop-in pipeline (both in this package): what a
 * request brings, what the store answers, and the deps it works with. conversation.ts re-exports it.
 */
import type { ConversationElement } from '@compactor/core';
import type { SessionRow } from '@compactor/db';
import type {
  FreshReading,
  OperationLog,
  SessionMessages,
  SessionResources,
  SessionTarget,
  TenantLimits,
} from '@compactor/sessions';

export interface GatewayDeps {
  resources: SessionResources;
  /** The API's single SessionMessages instance (its per-session write queue orders the writes). */
  messages: SessionMessages;
  limits: TenantLimits;
  /** Where writes report their warnings (never message text). */
  log: OperationLog;
}

export interface ConversationRequest {
  tenantId: string;
  protocol: 'openai' | 'anthropic';
  /** `X-Compactor-Session`. */
  sessionHeader: string | undefined;
  /** The request's `model`. */
  model: string;
  /** `X-Compactor-Context-Window` / `-Max-Output-Tokens` / `-Recall`, used when the session is created. */
  overrides: { contextWindow?: number; maxOutputTokens?: number; recall?: boolean };
  elements: ConversationElement[];
}

export type ConversationOutcome = 'created' | 'extended' | 'replayed' | 'diverged';

export interface SyncedConversation {
  session: SessionTarget;
  outcome: ConversationOutcome;
  /** The session the request diverged from (outcome `diverged`). */
  divergedFrom: string | null;
  /** Outcome `replayed`: the stored raw upstream answer to send again. */
  replay: StoredAnswer | null;
  /** The chain position the answer will take (= elements.length). */
  answerPosition: number;
  /** Offer the recall tool upstream. */
  recall: boolean;
  /** The session's row as this request read or wrote it (the context read does not read it again). */
  row: SessionRow;
  /**
   * The status the request's last write read, under the session's write queue, while it still
   * describes the session as that write left it; null when nothing was written or it does not.
   */
  reading: FreshReading | null;
  /** Where the answer is linked: the session's key, the conversation key, the request's last chain hash. */
  chain: { sessionPk: number; conversationKey: string | null; end: string };
}

export interface StoredAnswer {
  protocol: 'openai' | 'anthropic';
  /** The provider's answer JSON (a stream is stored accumulated). */
  body: unknown;
}
