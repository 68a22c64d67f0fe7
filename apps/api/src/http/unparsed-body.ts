import type { FastifyInstance, FastifySchemaCompiler } from 'fastify';
import type { FastifyRouteSchemaDef } from 'fastify/types/schema';
import { parseJsonOrNothing } from './empty-json-body';
import { readBodySegments } from './read-body';

/**
 * Bodies of at least this many bytes are parsed in a worker thread, not on the event loop:
 * JSON.parse takes ~4–6 ms per MiB and cannot be sliced.
 */
export const LARGE_BODY_BYTES = 1024 * 1024;

/** A large body the JSON parser left as bytes, in segments, for the route to parse off the event loop. */
export class UnparsedBody {
  constructor(public segments: Uint8Array[]) {}
}

/**
 * In `app`'s scope: JSON bodies of `method url` from {@link LARGE_BODY_BYTES} on reach the route
 * as an {@link UnparsedBody}, never copied whole on the event loop; every other body is parsed as
 * Fastify does by default (same limits, poisoning rules and errors), an empty one as no body.
 */
export function leaveLargeBodiesUnparsed(app: FastifyInstance, route: { method: string; url: string }): void {
  const { onProtoPoisoning = 'error', onConstructorPoisoning = 'ignore', bodyLimit } = app.initialConfig;
  const parseJson = app.getDefaultJsonParser(onProtoPoisoning, onConstructorPoisoning);
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', (request, payload, done) => {
    const limit = request.routeOptions.bodyLimit ?? bodyLimit ?? Infinity;
    readBodySegments(request, payload, limit).then(
      (segments) => {
        const length = segments.reduce((sum, segment) => sum + segment.length, 0);
        if (
          length >= LARGE_BODY_BYTES &&
          request.method === route.method &&
          request.routeOptions.url === route.url
        ) {
          done(null, new UnparsedBody(segments));
          return;
        }
        parseJsonOrNothing(parseJson, request, Buffer.concat(segments, length).toString('utf8'), done);
      },
      (error: Error) => done(error, undefined),
    );
  });
}

/**
 * `compile`, except that a body left unparsed passes (the route validates it itself). Typed for
 * the route it is set on: Fastify hands it that route's schemas, as it would `compile`.
 */
export function passingUnparsedBodies<Schema>(
  compile: FastifySchemaCompiler<never>,
): FastifySchemaCompiler<Schema> {
  return (route) => {
    const validate = compile(route as FastifyRouteSchemaDef<never>);
    if (route.httpPart !== 'body') return validate;
    return (data) => (data instanceof UnparsedBody ? { value: data } : validate(data));
  };
}
