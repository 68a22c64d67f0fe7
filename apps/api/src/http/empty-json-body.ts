import type { FastifyInstance, FastifyRequest } from 'fastify';

type JsonParser = ReturnType<FastifyInstance['getDefaultJsonParser']>;

/** Whether a JSON body is empty: nothing, or only whitespace (JSON.parse would reject both). */
export function isEmptyJsonBody(body: string): boolean {
  return body.trim() === '';
}

/**
 * Parses `body` with Fastify's JSON parser, except that an empty body is no body: many HTTP
 * clients send `Content-Type: application/json` on every request, a DELETE or a body-less POST
 * included. A route that needs a body still answers 400 through its schema.
 */
export function parseJsonOrNothing(
  parseJson: JsonParser,
  request: FastifyRequest,
  body: string,
  done: (error: Error | null, value?: unknown) => void,
): void {
  if (isEmptyJsonBody(body)) {
    done(null, undefined);
    return;
  }
  parseJson(request, body, done);
}

/** In `app`'s scope: JSON bodies are parsed as Fastify does (same limits and errors), empty ones are no body. */
export function acceptEmptyJsonBodies(app: FastifyInstance): void {
  const { onProtoPoisoning = 'error', onConstructorPoisoning = 'ignore' } = app.initialConfig;
  const parseJson = app.getDefaultJsonParser(onProtoPoisoning, onConstructorPoisoning);
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) =>
    parseJsonOrNothing(parseJson, request, body as string, done),
  );
}
