/**
 * The OpenAI-compatible upstream through the official `openai` SDK: its retries (408/409/429/5xx
 * and dropped connections, `maxRetries`), its timeout, its error classes; the answer comes back as
 * the raw `Response`, so the bytes reach the client as the provider sent them.
 */
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';
import type { ChatCompletionCreateParams } from 'openai/resources/chat/completions';
import { UpstreamFailure } from './errors';
import { withIdleBound } from './upstream-idle';
import type { DropInSettings, UpstreamEndpoint } from './upstream-config';

/** What one upstream call sends besides the body. */
export interface UpstreamCall {
  /** Aborts the call (the client went away). */
  signal: AbortSignal;
  /** Headers passed on from the client's request (see `forwardedHeaders`). */
  headers: Record<string, string>;
}

/** The SDK's clients, one per endpoint and key (a client holds its connection pool). */
export class OpenAIUpstream {
  private readonly clients = new Map<string, OpenAI>();

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
  async send(
    endpoint: UpstreamEndpoint,
    body: ChatCompletionCreateParams,
    call: UpstreamCall,
  ): Promise<Response> {
    const idle = new AbortController();
    let response: Response;
    try {
      response = await this.client(endpoint)
        .chat.completions.create(body, {
          signal: AbortSignal.any([call.signal, idle.signal]),
          headers: call.headers,
        })
        .asResponse();
    } catch (error) {
      throw upstreamFailureOf(error) ?? error;
    }
    const idleMs = this.settings.upstreamIdleMs;
    return withIdleBound(
      response,
      idleMs,
      () => idle.abort(),
      () =>
        new UpstreamFailure(
          504,
          openAIError(
            `the upstream provider stopped sending its answer (nothing for ${idleMs} ms)`,
            'timeout',
            'upstream_idle',
          ),
          'upstream answer idle',
        ),
    );
  }

  private client(endpoint: UpstreamEndpoint): OpenAI {
    const key = `${endpoint.baseURL}\n${endpoint.apiKey}`;
    let client = this.clients.get(key);
    if (!client) {
      client = new OpenAI({
        baseURL: endpoint.baseURL,
        apiKey: endpoint.apiKey,
        // Never the process's OPENAI_ORG_ID / OPENAI_PROJECT_ID: the endpoint says everything.
        organization: null,
        project: null,
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
export function upstreamFailureOf(error: unknown): UpstreamFailure | null {
  if (error instanceof APIUserAbortError) return null;
  if (error instanceof APIConnectionTimeoutError)
    return new UpstreamFailure(
      504,
      openAIError('the upstream provider did not answer in time', 'timeout', 'upstream_timeout'),
      error.message,
    );
  if (error instanceof APIConnectionError)
    return new UpstreamFailure(
      502,
      openAIError(
        'the upstream provider could not be reached',
        'api_connection_error',
        'upstream_unreachable',
      ),
      error.message,
    );
  if (error instanceof APIError && error.status !== undefined) {
    const body =
      error.error === undefined ? openAIError(error.message, 'api_error', null) : { error: error.error };
    return new UpstreamFailure(error.status, body, error.message, error.headers?.get('retry-after') ?? null);
  }
  return null;
}

/** OpenAI's error shape. */
export function openAIError(
  message: string,
  type: string,
  code: string | null,
): { error: { message: string; type: string; code: string | null } } {
  return { error: { message, type, code } };
}
