/**
 * What the drop-in pipeline refuses or passes on, in its own terms: the route turns each into the
 * provider's error shape (OpenAI `{ error: { message, type, code } }`, Anthropic `{ type: "error", … }`).
 * No HTTP types here; a status is a number the provider's clients understand.
 */

/** Why Compactor itself refuses a drop-in request (before any upstream call or write). */
export type DropInErrorCode =
  /** The body is not a request of the protocol (no messages, wrong types, not JSON). */
  | 'invalid_request'
  /** A Compactor header carries a value it cannot use (`X-Compactor-Context-Window: abc`). */
  | 'invalid_header'
  /** No upstream is configured for the protocol, and the client may not bring its own. */
  | 'upstream_not_configured';

const STATUS: Record<DropInErrorCode, number> = {
  invalid_request: 400,
  invalid_header: 400,
  upstream_not_configured: 503,
};

/** A refusal of Compactor's own; nothing was written and nothing was sent upstream. */
export class DropInError extends Error {
  override readonly name = 'DropInError';
  readonly status: number;
  constructor(
    readonly code: DropInErrorCode,
    message: string,
  ) {
    super(message);
    this.status = STATUS[code];
  }
}

/**
 * The upstream provider's own refusal or failure, after the SDK's retries: passed to the client
 * as it came (status and body), so an agent sees what it would have seen talking to the provider.
 * `body` is the provider's error JSON, or null when it sent none (a timeout, a dropped connection).
 */
export class UpstreamFailure extends Error {
  override readonly name = 'UpstreamFailure';
  constructor(
    readonly status: number,
    readonly body: unknown,
    message: string,
    readonly retryAfter: string | null = null,
  ) {
    super(message);
  }
}
