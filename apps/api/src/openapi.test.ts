/**
 * `/openapi.json` is complete and truthful: a structurally valid OpenAPI 3.1 document (no
 * validator package for 3.1 is installed, so the structure is checked here and every schema is
 * compiled by ajv's JSON Schema 2020-12 dialect), describing every route Fastify registered
 * but the documented hidden ones, with examples that validate against their own schemas.
 */
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENAPI_VERSION, UNDOCUMENTED_ROUTES } from './http/openapi-options';
import { buildDescribingServer } from './openapi';

// ajv-formats is CommonJS: its function is the default export's default under Node's ESM interop.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ??
  addFormatsModule) as typeof addFormatsModule;

type Json = Record<string, unknown>;
interface MediaType {
  schema?: Json;
  example?: unknown;
  examples?: Record<string, { value?: unknown }>;
}
interface Operation {
  parameters?: Array<{ in: string; name: string; required?: boolean; schema?: Json }>;
  requestBody?: { content?: Record<string, MediaType> };
  responses?: Record<string, { description?: string; content?: Record<string, MediaType> }>;
  operationId?: string;
}
interface Document {
  openapi: string;
  info: { title?: unknown; version?: unknown };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Json>; securitySchemes?: Record<string, Json> };
  security?: unknown[];
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

let app: FastifyInstance;
let doc: Document;
const registered: Array<{ method: string; url: string }> = [];

beforeAll(async () => {
  app = await buildDescribingServer({
    onRoute: ({ method, url }) => {
      for (const m of [method].flat()) registered.push({ method: m.toLowerCase(), url });
    },
  });
  doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json();
});
afterAll(() => app.close());

/** Every operation of the document with where it is. */
function operations(): Array<{ path: string; method: string; operation: Operation }> {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, operation]) => ({ path, method, operation })),
  );
}

/** Every `$ref` anywhere under `value`. */
function refsIn(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) for (const item of value) refsIn(item, found);
  else if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key === '$ref' && typeof item === 'string') found.push(item);
      else refsIn(item, found);
    }
  }
  return found;
}

/** An ajv that knows every component, so `#/components/schemas/X` refs resolve. */
function componentAwareAjv(): { ajv: Ajv2020; compile(schema: Json): ReturnType<Ajv2020['compile']> } {
  const ajv = new Ajv2020({ strict: true, allErrors: true });
  addFormats(ajv);
  const base = 'https://compactor.invalid/openapi.json';
  // `components/schemas` is no JSON Schema keyword: the components go under `$defs`, refs follow.
  const rewrite = (schema: unknown): unknown =>
    JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${base}#/$defs/`));
  ajv.addSchema(rewrite({ $id: base, $defs: doc.components.schemas }) as Json);
  return { ajv, compile: (schema) => ajv.compile(rewrite(schema) as Json) };
}

describe('the OpenAPI document', () => {
  it('is a structurally valid OpenAPI 3.1 document', () => {
    expect(doc.openapi).toBe(OPENAPI_VERSION);
    expect(typeof doc.info.title).toBe('string');
    expect(typeof doc.info.version).toBe('string');
    expect(doc.components.securitySchemes?.['bearer']).toEqual({ type: 'http', scheme: 'bearer' });
    const operationIds = new Set<string>();
    for (const { path, method, operation } of operations()) {
      const where = `${method.toUpperCase()} ${path}`;
      expect(path, where).toMatch(/^\//);
      // Every template parameter is a required path parameter, and no path parameter is extra.
      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]).sort();
      const declared = (operation.parameters ?? []).filter((p) => p.in === 'path');
      expect(declared.map((p) => p.name).sort(), where).toEqual(templated);
      for (const p of declared) expect(p.required, `${where} ${p.name}`).toBe(true);
      for (const p of operation.parameters ?? []) {
        expect(['query', 'header', 'path', 'cookie'], where).toContain(p.in);
        expect(p.schema, `${where} ${p.name}`).toBeTypeOf('object');
      }
      const statuses = Object.keys(operation.responses ?? {});
      expect(statuses.length, where).toBeGreaterThan(0);
      expect(
        statuses.some((s) => /^2\d\d$/.test(s)),
        `${where} has a 2xx`,
      ).toBe(true);
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        expect(status, where).toMatch(/^([1-5]\d\d|[1-5]XX|default)$/);
        expect(typeof response.description, `${where} ${status}`).toBe('string');
      }
      if (operation.operationId) {
        expect(operationIds.has(operation.operationId), operation.operationId).toBe(false);
        operationIds.add(operation.operationId);
      }
    }
    // Every reference points at a component that exists.
    for (const ref of refsIn(doc)) {
      expect(ref).toMatch(/^#\/components\/schemas\//);
      expect(doc.components.schemas, ref).toHaveProperty(ref.slice('#/components/schemas/'.length));
    }
  });

  it('holds only schemas that compile as JSON Schema 2020-12', () => {
    const { compile } = componentAwareAjv();
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      expect(() => compile(schema), name).not.toThrow();
    }
    for (const { path, method, operation } of operations()) {
      const media = [
        ...Object.values(operation.requestBody?.content ?? {}),
        ...Object.values(operation.responses ?? {}).flatMap((r) => Object.values(r.content ?? {})),
      ];
      for (const { schema } of media) {
        expect(() => compile(schema ?? {}), `${method} ${path}`).not.toThrow();
      }
      for (const p of operation.parameters ?? []) {
        expect(() => compile(p.schema ?? {}), `${method} ${path} ${p.name}`).not.toThrow();
      }
    }
  });

  it('describes every route Fastify registered but the documented hidden ones', () => {
    const hidden = (url: string) =>
      UNDOCUMENTED_ROUTES.some(({ prefix }) => url === prefix || url.startsWith(`${prefix}/`));
    const expected = registered
      // HEAD twins of GET routes are Fastify's own (exposeHeadRoutes), not routes of the API.
      .filter(({ method, url }) => method !== 'head' && !hidden(url))
      .map(({ method, url }) => `${method} ${url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);
    const described = operations().map(({ method, path }) => `${method} ${path}`);
    expect(expected.length).toBeGreaterThan(10);
    expect(described.sort()).toEqual([...new Set(expected)].sort());
    // The hidden ones are really registered (the list names nothing stale).
    for (const { prefix } of UNDOCUMENTED_ROUTES.filter(
      (r) => r.prefix !== '/metrics' && r.prefix !== '/admin/queues',
    )) {
      expect(
        registered.some(({ url }) => url === prefix || url.startsWith(`${prefix}/`)),
        prefix,
      ).toBe(true);
    }
  });

  it('has an example for every request body and 2xx response, valid against its schema', () => {
    const { compile } = componentAwareAjv();
    let checked = 0;
    for (const { path, method, operation } of operations()) {
      const media = [
        ...Object.entries(operation.requestBody?.content ?? {}).map(([type, m]) => ({
          what: `body ${type}`,
          m,
        })),
        ...Object.entries(operation.responses ?? {})
          .filter(([status]) => status.startsWith('2'))
          .flatMap(([status, r]) =>
            Object.entries(r.content ?? {}).map(([type, m]) => ({ what: `${status} ${type}`, m })),
          ),
      ];
      for (const { what, m } of media) {
        const where = `${method.toUpperCase()} ${path} ${what}`;
        const examples = [
          ...(m.example === undefined ? [] : [m.example]),
          ...Object.values(m.examples ?? {}).map((e) => e.value),
        ];
        expect(examples.length, `${where} has an example`).toBeGreaterThan(0);
        const validate = compile(m.schema ?? {});
        for (const example of examples) {
          expect(validate(example), `${where}: ${JSON.stringify(validate.errors)}`).toBe(true);
          checked += 1;
        }
      }
    }
    // Component examples too (they document the shared shapes).
    for (const [name, schema] of Object.entries(doc.components.schemas)) {
      const validate = compile({ $ref: `#/components/schemas/${name}` });
      for (const example of (schema['examples'] as unknown[] | undefined) ?? []) {
        expect(validate(example), `${name}: ${JSON.stringify(validate.errors)}`).toBe(true);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(20);
  });
});
