/**
 * The Anthropic upstream through the official `@anthropic-ai/sdk`: its retries (408/409/429/5xx,
 * 529 overloaded, dropped connections: `maxRetries`), its timeout, its error classes; the answer
 * comes back as the raw `Response`, so the bytes reach the client as the provider sent them.
 */
import Anthropic, {
  APIConnectionError,
  APIConnectionTimeoutError,
  APIError,
  APIUserAbortError,
} from '@anthropic-ai/sdk';
import type { MessageCreateParams } from '@anthropic-ai/sdk/resources/messages';
import { UpstreamFailure } from './errors';
import { withIdleBound } from './upstream-idle';
import type { UpstreamCall } from './openai-upstream';
import type { DropInSettings, UpstreamEndpoint } from './upstream-config';

/** Anthropic's error types, each with the status Anthropic answers it with. */
export type AnthropicErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'request_too_large'
  | 'rate_limit_error'
  | 'api_error'
  | 'overloaded_error'
  | 'timeout_error';

export interface AnthropicErrorBody {
  type: 'error';
  error: { type: AnthropicErrorType; message: string };
}

/** Anthropic's error shape. */
export function anthropicError(type: AnthropicErrorType, message: string): AnthropicErrorBody {
  return { type: 'error', error: { type, message } };
}

/** The SDK's clients, one per endpoint and key (a client holds its connection pool). */
export class AnthropicUpstream {
  private readonly clients = new Map<string, Anthropic>();

  constructor(
    private readonly settings: Pick<
      DropInSettings,
      'upstreamTimeoutMs' | 'upstreamMaxRetries' | 'upstreamIdleMs'
    >,
  ) {}

  /**
   * Sends the body; resolves with the provider's 2xx response, its body unread. Anything else
   * (an error status after the retries, a timeout, a refused connection) is an `UpstreamFailure`
   * carrying what the client should see; an abort rejects with the SDK's `APIUserAbortError`.
   * The body fails with a 504 `UpstreamFailure` when it stays silent for `upstreamIdleMs`.
   */
  async send(endpoint: UpstreamEndpoint, body: MessageCreateParams, call: UpstreamCall): Promise<Response> {
    const idle = new AbortController();
    let response: Response;
    try {
      response = await this.client(endpoint)
        .messages.create(body, { signal: AbortSignal.any([call.signal, idle.signal]), headers: call.headers })
        .asResponse();
    } catch (error) {
      throw anthropicFailureOf(error) ?? error;
    }
    const message = `the upstream provider stopped sending its answer (nothing for ${this.settings.upstreamIdleMs} ms)`;
    return withIdleBound(
      response,
      this.settings.upstreamIdleMs,
      () => idle.abort(),
      // A whole answer is Anthropic's 504; a stream's error event carries an error type it sends
      // mid-stream (`api_error`), the status being sent already.
      () =>
        new UpstreamFailure(
          504,
          anthropicError(body.stream === true ? 'api_error' : 'timeout_error', message),
          'upstream answer idle',
        ),
    );
  }

  private client(endpoint: UpstreamEndpoint): Anthropic {
    const key = `${endpoint.baseURL}\n${endpoint.apiKey}`;
    let client = this.clients.get(key);
    if (!client) {
      client = new Anthropic({
        baseURL: endpoint.baseURL,
        apiKey: endpoint.apiKey,
        // Never the process's ANTHROPIC_AUTH_TOKEN: the endpoint's key says everything.
        authToken: null,
        timeout: this.settings.upstreamTimeoutMs,
        maxRetries: this.settings.upstreamMaxRetries,
      });
      // A client's own key (X-Upstream-Api-Key) gets a client per request: keep only a few.
      if (this.clients.size >= 16) this.clients.clear();
      this.clients.set(key, client);
    }
    return client;
  }
}

/** The SDK's error as the client should see it, or null for an abort and anything unexpected. */
export function anthropicFailureOf(error: unknown): UpstreamFailure | null {
  if (error instanceof APIUserAbortError) return null;
  if (error instanceof APIConnectionTimeoutError)
    return new UpstreamFailure(
      504,
      anthropicError('timeout_error', 'the upstream provider did not answer in time'),
      error.message,
    );
  if (error instanceof APIConnectionError)
    return new UpstreamFailure(
      502,
      anthropicError('api_error', 'the upstream provider could not be reached'),
      error.message,
    );
  if (error instanceof APIError && error.status !== undefined) {
    // The SDK keeps the whole error body Anthropic sent (`{ type: "error", error: { … } }`).
    const body =
      error.error === undefined ? anthropicError(typeForStatus(error.status), error.message) : error.error;
    return new UpstreamFailure(error.status, body, error.message, error.headers?.get('retry-after') ?? null);
  }
  return null;
}

/** Anthropic's `error.type` for a status (what its own API answers). */
export function typeForStatus(status: number): AnthropicErrorType {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 413) return 'request_too_large';
  if (status === 429) return 'rate_limit_error';
  if (status === 503 || status === 529) return 'overloaded_error';
  if (status >= 500) return 'api_error';
  return 'invalid_request_error';
}
