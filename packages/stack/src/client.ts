/** The API over HTTP with a bearer key: JSON in, JSON out, a non-2xx status throws with its body. */

export type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** One call to the API: `call('GET', '/v1/sessions/x')`. */
export type ApiCall = (method: string, path: string, body?: unknown) => Promise<Json>;

/** A non-2xx answer: the status and the API's error code, for callers that handle some of them. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    message: string,
    readonly status: number,
    readonly code: string | null,
  ) {
    super(message);
  }
}

/** Calls the API at `base` (no trailing slash) with `key` (`null`: an open API). */
export function apiClient(base: string, key: string | null): ApiCall {
  return async (method, path, body) => {
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : null,
    });
    const text = await response.text();
    if (!response.ok) {
      let code: string | null = null;
      try {
        code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null;
      } catch {
        // Not the API's error shape (a proxy's page): the status says enough.
      }
      throw new ApiError(
        `${method} ${path} → ${response.status}: ${text.slice(0, 500)}`,
        response.status,
        code,
      );
    }
    return (text === '' ? {} : JSON.parse(text)) as Json;
  };
}
