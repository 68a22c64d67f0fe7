import { ErrorBody } from '@compactor/contract';

/**
 * A non-2xx answer of the API, with its error body: `status`, `code` (`validation_error`,
 * `not_found`, `conflict`, … or `http_error` when the body was not the API's, e.g. a proxy's page),
 * `message`, `details` (a 400's failing paths are in `details.issues`).
 */
export class CompactorApiError extends Error {
  override readonly name = 'CompactorApiError';
  constructor(
    /** The HTTP status. */
    readonly status: number,
    /** The API's error code (see `ERROR_CODES` of @compactor/contract), or `http_error`. */
    readonly code: string,
    message: string,
    /** The error body's `details`, when it has some. */
    readonly details: unknown,
    /** What the request was: `POST /v1/sessions`. */
    readonly request: string,
  ) {
    super(message);
  }

  /** Reads an error answer's body; a body that is not the API's shape keeps its first 500 characters. */
  static async from(response: Response, request: string): Promise<CompactorApiError> {
    const text = await response.text().catch(() => '');
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(text);
    } catch {
      // Not JSON: a proxy's page, a truncated body.
    }
    const body = ErrorBody.safeParse(parsed);
    if (body.success) {
      const { code, message, details } = body.data.error;
      return new CompactorApiError(response.status, code, message, details, request);
    }
    const message = text.slice(0, 500) || response.statusText || `HTTP ${response.status}`;
    return new CompactorApiError(response.status, 'http_error', message, undefined, request);
  }
}

/** A response that did not match the contract (only with `validateResponses: true`). */
export class CompactorResponseError extends Error {
  override readonly name = 'CompactorResponseError';
  constructor(
    message: string,
    /** What the request was: `GET /v1/sessions/x`. */
    readonly request: string,
    /** The zod issues: which fields of the answer were not as the contract says. */
    readonly issues: readonly unknown[],
  ) {
    super(message);
  }
}
