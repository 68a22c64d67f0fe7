import {
  AppendResponse,
  CompactionDetailOut,
  CompactionOut,
  CompactionPage,
  ContextOut,
  HistoryPage,
  OverflowOut,
  PatchResponse,
  PruneOut,
  RecallResponse,
  RevertCompactionOut,
  SessionOut,
  type AppendMessagesRequest,
  type AppendMessagesResponse,
  type Compaction,
  type CompactionPageResponse,
  type CompactionWithSteps,
  type Context,
  type CreateCompactionRequest,
  type ContextToolName,
  type CreateSessionRequest,
  type HistoryPageResponse,
  type MessageRequest,
  type NativeContext,
  type OpenAIContext,
  type OpenAIToolMessage,
  type OverflowRequest,
  type OverflowResponse,
  type PatchMessageRequest,
  type PatchMessageResponse,
  type PatchSessionRequest,
  type PruneResponse,
  type RecallMedia,
  type RecallOutput,
  type RecallLedger,
  type RecallLedgerKind,
  type RecallSearch,
  type RevertCompactionResponse,
  type Session,
  type SessionEventMessage,
} from '@compactor/contract';
import type { z } from 'zod';
import { sessionEvents, type EventsOptions } from './events.js';
import { executeRecallToolCall, type RecallRequest, type ToolCallLike } from './recall-tool.js';
import { withMessageIds } from './message-ids.js';
import { retryPolicy, type RetryOptions } from './retry.js';
import { readJson, send, sendJson, type Call, type TransportSettings } from './transport.js';

/** Where the API is and how to call it. */
export interface CompactorClientOptions {
  /** The API's origin (and path prefix, if it is mounted under one): `http://127.0.0.1:3000`. */
  baseUrl: string;
  /** The bearer key; null or omitted for an API that runs open. */
  apiKey?: string | null;
  /** Sent with every request (tracing headers, say). */
  headers?: Record<string, string>;
  /** Retries of 429 and 503 answers (see {@link RetryOptions}). */
  retry?: RetryOptions;
  /**
   * Check every answer against the contract's schemas (a {@link CompactorResponseError} when one
   * does not match). Off by default: it costs a parse of large contexts; tests turn it on.
   */
  validateResponses?: boolean;
  /**
   * What sends the requests, the event stream's included (default: global `fetch`): a transport
   * of the caller's, e.g. one that keeps connections alive with Node's http agent.
   */
  fetch?: typeof fetch;
}

/**
 * How a context read fits `usable` (`GET …/context`): `fit: 'none'` serves the stored view as it
 * is; `waitMs` waits that long at most (≤ 60,000) for a running compaction when the view is over,
 * before fitting it at read time. The answer's `fit` says what was served.
 */
export interface ContextFitOptions {
  fit?: 'auto' | 'none';
  waitMs?: number;
}

/** Options every call takes. */
export interface CallOptions {
  /** Cancels the request (and any retry wait). */
  signal?: AbortSignal;
}

/** A compaction request: the body's fields plus the `Idempotency-Key` header. */
export interface CompactionRequestOptions extends CreateCompactionRequest, CallOptions {
  /** Makes the request safe to retry: the same key and body return the same compaction (≤ 200 printable ASCII). */
  idempotencyKey?: string;
}

const segment = encodeURIComponent;
const sessionPath = (id: string) => `/v1/sessions/${segment(id)}`;

/**
 * The Compactor API, typed by its contract (@compactor/contract). Every method is one request;
 * 429 and 503 are retried (see {@link RetryOptions}), other errors throw {@link CompactorApiError}.
 */
export class CompactorClient {
  private readonly settings: TransportSettings;

  constructor(options: CompactorClientOptions) {
    this.settings = {
      baseUrl: options.baseUrl,
      apiKey: options.apiKey ?? null,
      headers: options.headers ?? {},
      retry: retryPolicy(options.retry),
      validateResponses: options.validateResponses ?? false,
      // Looked up at each call, not now: a test may replace the global after the client exists.
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    };
  }

  /** `POST /v1/sessions`: creates a session (or returns it: same id and body again). */
  createSession(body: CreateSessionRequest, options: CallOptions = {}): Promise<Session> {
    return this.json({ method: 'POST', path: '/v1/sessions', body, signal: options.signal }, SessionOut);
  }

  /** `GET /v1/sessions/:id`: the session with its live status. */
  getSession(id: string, options: CallOptions = {}): Promise<Session> {
    return this.json({ method: 'GET', path: sessionPath(id), signal: options.signal }, SessionOut);
  }

  /** `PATCH /v1/sessions/:id`: merges model and metadata, deep-merges policy overrides. */
  patchSession(id: string, body: PatchSessionRequest, options: CallOptions = {}): Promise<Session> {
    return this.json({ method: 'PATCH', path: sessionPath(id), body, signal: options.signal }, SessionOut);
  }

  /** `DELETE /v1/sessions/:id`: removes the session and everything in it. */
  async deleteSession(id: string, options: CallOptions = {}): Promise<void> {
    const response = await send(this.settings, {
      method: 'DELETE',
      path: sessionPath(id),
      signal: options.signal,
    });
    await response.body?.cancel();
  }

  /**
   * `POST /v1/sessions/:id/messages`: appends a batch, idempotent by client message id. A message
   * without an id gets one here (`msg_<uuid>`), so a retry after an answer that never arrived, or
   * a 503 whose write committed anyway, stores nothing twice.
   */
  appendMessages(
    id: string,
    messages: MessageRequest[] | AppendMessagesRequest,
    options: CallOptions = {},
  ): Promise<AppendMessagesResponse> {
    const body = withMessageIds(Array.isArray(messages) ? { messages } : messages);
    return this.json(
      { method: 'POST', path: `${sessionPath(id)}/messages`, body, signal: options.signal, idempotent: true },
      AppendResponse,
    );
  }

  /** `GET /v1/sessions/:id/messages`: a page of the raw history (pruned outputs and summaries included). */
  listMessages(
    id: string,
    query: { afterSeq?: number; limit?: number } = {},
    options: CallOptions = {},
  ): Promise<HistoryPageResponse> {
    return this.json(
      { method: 'GET', path: `${sessionPath(id)}/messages`, query, signal: options.signal },
      HistoryPage,
    );
  }

  /** `PATCH /v1/sessions/:id/messages/:messageId`: finishes a streamed turn (finish, usage, tool results). */
  patchMessage(
    id: string,
    messageId: string,
    body: PatchMessageRequest,
    options: CallOptions = {},
  ): Promise<PatchMessageResponse> {
    return this.json(
      {
        method: 'PATCH',
        path: `${sessionPath(id)}/messages/${segment(messageId)}`,
        body,
        signal: options.signal,
      },
      PatchResponse,
    );
  }

  /** `GET /v1/sessions/:id/context`: the stored messages the model sees next (pruned outputs replaced). */
  getContext(
    id: string,
    options?: CallOptions & ContextFitOptions & { format?: 'native' },
  ): Promise<NativeContext>;
  /**
   * `GET /v1/sessions/:id/context?format=openai`: the same, as a Chat Completions `messages` array;
   * `tools: 'recall'` adds `tools`, the recall tool's definition to send along (see
   * {@link executeRecallToolCall}).
   */
  getContext(
    id: string,
    options: CallOptions & ContextFitOptions & { format: 'openai'; tools?: ContextToolName },
  ): Promise<OpenAIContext>;
  getContext(
    id: string,
    options: CallOptions & ContextFitOptions & { format?: 'native' | 'openai'; tools?: ContextToolName } = {},
  ): Promise<Context> {
    return this.json(
      {
        method: 'GET',
        path: `${sessionPath(id)}/context`,
        query: {
          format: options.format ?? 'native',
          tools: options.tools,
          fit: options.fit,
          wait: options.waitMs,
        },
        signal: options.signal,
      },
      ContextOut,
    );
  }

  /** `GET /v1/sessions/:id/recall?callId=`: a tool output compaction cleared, as stored (404, or 410 once purged). */
  recall(id: string, query: { callId: string }, options?: CallOptions): Promise<RecallOutput>;
  /** `GET /v1/sessions/:id/recall?q=`: passages of the history out of the model's view that match, best first. */
  recall(id: string, query: { q: string; limit?: number }, options?: CallOptions): Promise<RecallSearch>;
  /** `GET /v1/sessions/:id/recall?kind=`: a section of what the session touched, whole, newest first, a page at a time. */
  recall(
    id: string,
    query: { kind: RecallLedgerKind; limit?: number; cursor?: string },
    options?: CallOptions,
  ): Promise<RecallLedger>;
  /** `GET /v1/sessions/:id/recall?mediaId=`: the image or document a media marker names, whole (404 if none). */
  recall(id: string, query: { mediaId: string }, options?: CallOptions): Promise<RecallMedia>;
  recall(
    id: string,
    query: RecallRequest | { mediaId: string },
    options?: CallOptions,
  ): Promise<RecallResponse>;
  recall(
    id: string,
    query: RecallRequest | { mediaId: string },
    options: CallOptions = {},
  ): Promise<RecallResponse> {
    return this.json(
      { method: 'GET', path: `${sessionPath(id)}/recall`, query: { ...query }, signal: options.signal },
      RecallResponse,
    );
  }

  /**
   * Executes a model's `recall` tool call against the session and returns the tool message to
   * append (`{ role: 'tool', tool_call_id, content }`). Arguments the model got wrong, an unknown
   * call id and a purged output are answered in `content`, for the model to read; a call of
   * another tool, and any other API error, throw.
   */
  executeRecallToolCall(
    id: string,
    toolCall: ToolCallLike,
    options: CallOptions = {},
  ): Promise<OpenAIToolMessage> {
    return executeRecallToolCall((query) => this.recall(id, query, options), toolCall);
  }

  /**
   * `POST /v1/sessions/:id/compactions`: compacts now. `created` is true for a new compaction
   * (202), false for the active one or the one an `idempotencyKey` already created (200).
   */
  async requestCompaction(
    id: string,
    options: CompactionRequestOptions = {},
  ): Promise<{ compaction: Compaction; created: boolean }> {
    const { idempotencyKey, signal, ...body } = options;
    const response = await send(this.settings, {
      method: 'POST',
      path: `${sessionPath(id)}/compactions`,
      body,
      headers: idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey },
      signal,
    });
    const request = `POST ${sessionPath(id)}/compactions`;
    const compaction = await readJson(this.settings, response, CompactionOut, request);
    return { compaction, created: response.status === 202 };
  }

  /** `GET /v1/sessions/:id/compactions`: the session's compactions, newest first (`nextBefore` pages on). */
  listCompactions(
    id: string,
    query: { limit?: number; before?: string } = {},
    options: CallOptions = {},
  ): Promise<CompactionPageResponse> {
    return this.json(
      { method: 'GET', path: `${sessionPath(id)}/compactions`, query, signal: options.signal },
      CompactionPage,
    );
  }

  /** `GET /v1/compactions/:id`: one compaction with its step attempts. */
  getCompaction(compactionId: string, options: CallOptions = {}): Promise<CompactionWithSteps> {
    return this.json(
      { method: 'GET', path: `/v1/compactions/${segment(compactionId)}`, signal: options.signal },
      CompactionDetailOut,
    );
  }

  /**
   * `POST /v1/compactions/:id/revert`: undoes the session's latest completed compaction (the view
   * before it is served again); the compaction as reverted, and the session's status. A 409
   * `conflict` says why not in `details.reason` (`not_latest`, `not_completed`,
   * `compaction_active`, `history_purged`).
   */
  revertCompaction(compactionId: string, options: CallOptions = {}): Promise<RevertCompactionResponse> {
    return this.json(
      { method: 'POST', path: `/v1/compactions/${segment(compactionId)}/revert`, signal: options.signal },
      RevertCompactionOut,
    );
  }

  /** `POST /v1/sessions/:id/prune`: starts a prune-only job. */
  prune(id: string, options: CallOptions = {}): Promise<PruneResponse> {
    return this.json({ method: 'POST', path: `${sessionPath(id)}/prune`, signal: options.signal }, PruneOut);
  }

  /**
   * `POST /v1/sessions/:id/overflow`: reports what the provider said (an error, or a turn's
   * usage); an overflow starts an emergency compaction, returned in `compaction`.
   */
  reportOverflow(id: string, report: OverflowRequest, options: CallOptions = {}): Promise<OverflowResponse> {
    return this.json(
      { method: 'POST', path: `${sessionPath(id)}/overflow`, body: report, signal: options.signal },
      OverflowOut,
    );
  }

  /**
   * `GET /v1/sessions/:id/events`: the session's events, `for await (const event of
   * client.events(id))`. See {@link EventsOptions} for reconnecting and stopping.
   */
  events(id: string, options: EventsOptions = {}): AsyncGenerator<SessionEventMessage> {
    return sessionEvents(this.settings, id, options);
  }

  private json<S extends z.ZodType>(call: Call, schema: S): Promise<z.output<S>> {
    return sendJson(this.settings, call, schema);
  }
}
