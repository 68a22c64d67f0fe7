/**
 * The conversation store: which session a drop-in request continues (the `X-Compactor-Session`
 * header, else the hash chain of its messages within the tenant), what of it is new, and the
 * upstream's answer stored so that the client's next request, which echoes it, extends the chain.
 */
import type {
  OperationLog,
  SessionMessages,
  SessionResources,
  SessionTarget,
  TenantLimits,
} from '@compactor/sessions';
import type { ConversationElement, DropInAnswer } from './conversation-stand-ins';

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
}

export interface StoredAnswer {
  protocol: 'openai' | 'anthropic';
  /** The provider's answer JSON (a stream is stored accumulated). */
  body: unknown;
}

/** Resolves the session and writes what is new (appends + tool-result patches), linking every element into the chain. */
export function syncConversation(
  deps: GatewayDeps,
  request: ConversationRequest,
): Promise<SyncedConversation> {
  void deps;
  void request;
  return Promise.reject(new Error('syncConversation: not yet'));
}

/** Stores the upstream answer (assistant message, usage) and links its echo at `answerPosition`; keeps `raw` for an identical retry. */
export function recordAnswer(
  deps: GatewayDeps,
  conversation: SyncedConversation,
  answer: DropInAnswer,
  raw: StoredAnswer,
): Promise<void> {
  void deps;
  void conversation;
  void answer;
  void raw;
  return Promise.reject(new Error('recordAnswer: not yet'));
}
