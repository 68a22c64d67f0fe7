import { STATUS_CODES } from 'node:http';
import type { SwaggerOptions } from '@fastify/swagger';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';

/** The OpenAPI document's version: 3.1, whose schemas are JSON Schema 2020-12 (what zod 4 emits). */
export const OPENAPI_VERSION = '3.1.0';

/**
 * Routes that are registered but deliberately left out of the document, with why. The OpenAPI
 * test checks every other registered route is described.
 */
export const UNDOCUMENTED_ROUTES: ReadonlyArray<{ prefix: string; why: string }> = [
  { prefix: '/docs', why: 'the Swagger UI over this document' },
  { prefix: '/openapi.json', why: 'this document' },
  { prefix: '/metrics', why: "Prometheus' text format, for scrapers" },
  { prefix: '/admin/queues', why: 'the operator dashboard (bull-board), behind ADMIN_TOKEN' },
  { prefix: '/mcp', why: 'the MCP server: JSON-RPC over streamable HTTP (docs/MCP.md)' },
];

interface MediaType {
  schema?: { $ref?: string; examples?: unknown[] };
  example?: unknown;
  examples?: unknown;
}
interface Operation {
  requestBody?: { content?: Record<string, MediaType> };
  responses?: Record<string, { description?: string; content?: Record<string, MediaType> }>;
}
interface Document {
  paths?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, { examples?: unknown[] }> };
}

/**
 * Gives each request body and response the example of its schema, and each response its status
 * text. zod puts `.meta({ examples })` on the schema; a registered schema (`.meta({ id })`) is a
 * `$ref` to a component, and Swagger UI and code generators read a media type's own `example`.
 */
export function withMediaExamples<T>(document: T): T {
  const doc = document as Document;
  const schemas = doc.components?.schemas ?? {};
  const lift = (media: MediaType) => {
    if (media.example !== undefined || media.examples !== undefined) return;
    const ref = media.schema?.$ref?.replace('#/components/schemas/', '');
    // A `content`-keyed response (the event stream) keeps its examples on its inline schema.
    const examples = ref === undefined ? media.schema?.examples : schemas[ref]?.examples;
    if (examples?.length) media.example = examples[0];
  };
  for (const methods of Object.values(doc.paths ?? {})) {
    for (const operation of Object.values(methods)) {
      for (const media of Object.values(operation.requestBody?.content ?? {})) lift(media);
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        if (response.description === 'Default Response')
          response.description = STATUS_CODES[status] ?? status;
        for (const media of Object.values(response.content ?? {})) lift(media);
      }
    }
  }
  return document;
}

/** @fastify/swagger's options: the document's head, and zod → JSON Schema for every route. */
export const openApiOptions: SwaggerOptions = {
  openapi: {
    openapi: OPENAPI_VERSION,
    info: {
      title: 'Compactor API',
      version: '1.0.0',
      description:
        'Stores LLM agent sessions, compacts them durably, and returns the exact context the model should see next.',
    },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    security: [{ bearer: [] }],
  },
  transform: jsonSchemaTransform,
  transformObject: (input) => withMediaExamples(jsonSchemaTransformObject(input)),
};
