/**
 * Writes docs/API.md from the OpenAPI document the API serves (`GET /openapi.json`): every route
 * with its parameters, body fields, responses and examples, and the error codes. The document is
 * built from @compactor/contract's schemas, so the page says what the server validates.
 * `generate-api-docs.test.ts` fails when the committed page is stale.
 *
 *   npm run docs:api
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as prettier from 'prettier';
import { openApiDocument } from '@compactor/api';
import { ERROR_CODES, ERROR_STATUS } from '@compactor/contract';
import { eventsSection } from './api-docs-events';
import { messagesSection } from './api-docs-messages';
import { policySection } from './api-docs-policy';
import { usageSection } from './api-docs-usage';

/** The page, relative to the repository root. */
export const API_DOCS_PATH = 'docs/API.md';

type Schema = Record<string, unknown>;
interface MediaType {
  schema?: Schema;
  example?: unknown;
  examples?: Record<string, { summary?: string; value?: unknown }>;
}
interface Parameter {
  in: string;
  name: string;
  required?: boolean;
  description?: string;
  schema?: Schema;
}
interface Operation {
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: Parameter[];
  requestBody?: { required?: boolean; description?: string; content?: Record<string, MediaType> };
  responses?: Record<string, { description?: string; content?: Record<string, MediaType> }>;
}
interface Document {
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

const refName = (ref: string) => ref.replace('#/components/schemas/', '').replace('#/$defs/', '');
/** Markdown table cells hold no pipes or newlines. */
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');

/** A short type for a table: `string`, `integer 0…2147483647`, `Compaction \| null`, `Message[]`. */
export function typeOf(schema: Schema | undefined): string {
  if (!schema) return 'any';
  if (typeof schema['$ref'] === 'string') return refName(schema['$ref']);
  if (Array.isArray(schema['enum'])) return schema['enum'].map((v) => JSON.stringify(v)).join(' | ');
  if (schema['const'] !== undefined) return JSON.stringify(schema['const']);
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options)) return [...new Set(options.map((o) => typeOf(o as Schema)))].join(' | ');
  }
  const type = schema['type'];
  if (Array.isArray(type)) return type.map((t) => typeOf({ ...schema, type: t })).join(' | ');
  if (type === 'array') return `${typeOf(schema['items'] as Schema | undefined)}[]`;
  if (type === 'integer' || type === 'number') {
    const min = schema['minimum'] ?? schema['exclusiveMinimum'];
    const max = schema['maximum'];
    return min !== undefined || max !== undefined ? `${type} ${min ?? ''}…${max ?? ''}` : type;
  }
  if (type === 'string' && typeof schema['format'] === 'string') return `string (${schema['format']})`;
  if (type === 'object' && !schema['properties']) return 'object';
  return typeof type === 'string' ? type : 'any';
}

/** The schema itself, or the component a `$ref` names. */
function resolve(doc: Document, schema: Schema | undefined): Schema | undefined {
  return typeof schema?.['$ref'] === 'string' ? doc.components.schemas[refName(schema['$ref'])] : schema;
}

/**
 * Fields whose shape has its own section of the page, by name and by the type that section
 * documents: their type cells link to it (the session's policy is an object of nested objects a
 * route table cannot hold). A compaction's `usage`, the summarizer's, is another shape: no link.
 */
const SECTION_OF_FIELD: Record<string, { link: string; type: RegExp }> = {
  policy: { link: '[Policy](#policy)', type: /^object$/ },
  effectivePolicy: { link: '[Policy](#policy)', type: /^object$/ },
  usage: { link: '[Usage](#usage)', type: /^Usage(Input)?\b/ },
};

/** A field's type cell, with a link to the section that spells its fields out. */
function fieldType(name: string, schema: Schema): string {
  const type = typeOf(schema);
  const section = SECTION_OF_FIELD[name];
  return cell(section?.type.test(type) ? `${type}, see ${section.link}` : type);
}

/** A field table of an object schema's properties, or null when it has none. */
function fieldTable(doc: Document, schema: Schema | undefined): string | null {
  const object = resolve(doc, schema);
  const properties = object?.['properties'] as Record<string, Schema> | undefined;
  if (!properties) return null;
  const required = new Set((object?.['required'] as string[] | undefined) ?? []);
  const rows = Object.entries(properties).map(
    ([name, property]) =>
      `| \`${name}\` | ${fieldType(name, property)} | ${required.has(name) ? 'yes' : ''} | ${cell(String(property['description'] ?? ''))} |`,
  );
  return ['| field | type | required | |', '| --- | --- | --- | --- |', ...rows].join('\n');
}

/** The media type's examples, named. */
function examplesOf(media: MediaType): Array<{ name: string | null; value: unknown }> {
  if (media.example !== undefined) return [{ name: null, value: media.example }];
  return Object.entries(media.examples ?? {}).map(([name, e]) => ({
    name: e.summary ?? name,
    value: e.value,
  }));
}

function exampleBlocks(media: MediaType, type: string): string[] {
  return examplesOf(media).flatMap(({ name, value }) => [
    ...(name ? [`_${name}_`, ''] : []),
    type === 'application/json' ? '```json' : '```text',
    typeof value === 'string' ? value.trimEnd() : JSON.stringify(value, null, 2),
    '```',
    '',
  ]);
}

const anchor = (method: string, route: string) =>
  `${method}-${route}`
    .toLowerCase()
    .replace(/[^a-z0-9 -]/g, '')
    .replace(/ /g, '-');

function renderOperation(doc: Document, method: string, route: string, operation: Operation): string[] {
  const lines = [`### ${method.toUpperCase()} ${route}`, ''];
  if (operation.summary) lines.push(operation.summary, '');
  if (operation.description) lines.push(operation.description, '');
  const parameters = operation.parameters ?? [];
  if (parameters.length > 0) {
    lines.push('| parameter | in | type | required | |', '| --- | --- | --- | --- | --- |');
    for (const p of parameters) {
      const description = p.description ?? String(p.schema?.['description'] ?? '');
      lines.push(
        `| \`${p.name}\` | ${p.in} | ${cell(typeOf(p.schema))} | ${p.required ? 'yes' : ''} | ${cell(description)} |`,
      );
    }
    lines.push('');
  }
  for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
    const optional = operation.requestBody?.required === false ? ' (optional)' : '';
    lines.push(
      `**Request body**${optional} \`${type}\`${media.schema ? `: ${typeOf(media.schema)}` : ''}`,
      '',
    );
    const description = operation.requestBody?.description;
    if (description) lines.push(description, '');
    const table = fieldTable(doc, media.schema);
    if (table) lines.push(table, '');
    lines.push(...exampleBlocks(media, type));
  }
  lines.push('| status | meaning | body |', '| --- | --- | --- |');
  for (const [status, response] of Object.entries(operation.responses ?? {})) {
    const bodies = Object.entries(response.content ?? {}).map(
      ([type, media]) => `${typeOf(media.schema)} (\`${type}\`)`,
    );
    lines.push(`| ${status} | ${cell(response.description ?? '')} | ${cell(bodies.join(', '))} |`);
  }
  lines.push('');
  for (const [status, response] of Object.entries(operation.responses ?? {})) {
    if (!status.startsWith('2')) continue;
    for (const [type, media] of Object.entries(response.content ?? {})) {
      lines.push(`**${status}** \`${type}\`: ${typeOf(media.schema)}`, '');
      const table = fieldTable(doc, media.schema);
      if (table) lines.push(table, '');
      lines.push(...exampleBlocks(media, type));
    }
  }
  return lines;
}

/** The whole page, formatted by prettier with the repository's settings. */
export async function renderApiDocs(document: Record<string, unknown>, root: string): Promise<string> {
  const doc = document as unknown as Document;
  const operations = Object.entries(doc.paths).flatMap(([route, methods]) =>
    Object.entries(methods).map(([method, operation]) => ({ method, route, operation })),
  );
  const lines = [
    `# ${doc.info.title} ${doc.info.version}`,
    '',
    '<!-- Generated by `npm run docs:api` from the OpenAPI document (GET /openapi.json); edit the',
    '     schemas in packages/contract or the routes in apps/api, not this file. -->',
    '',
    doc.info.description ?? '',
    '',
    'Every `/v1` route takes the key as `Authorization: Bearer <key>` or as `x-api-key: <key>` (what the Anthropic SDK sends); see [apps/api](../apps/api/README.md#auth).',
    'The machine-readable version of this page is `GET /openapi.json` (OpenAPI 3.1); a typed client',
    'is [`@compactor/client`](../packages/client/README.md).',
    '',
    '## Routes',
    '',
    '| route | |',
    '| --- | --- |',
    ...operations.map(
      ({ method, route, operation }) =>
        `| [\`${method.toUpperCase()} ${route}\`](#${anchor(method, route)}) | ${cell(operation.summary ?? '')} |`,
    ),
    '',
    '## Errors',
    '',
    'Every non-2xx answer has the body `{ "error": { "code", "message", "details"? } }`.',
    '',
    '| code | status | meaning |',
    '| --- | --- | --- |',
    ...ERROR_CODES.map(
      (code) => `| \`${code}\` | ${ERROR_STATUS[code].status} | ${cell(ERROR_STATUS[code].meaning)} |`,
    ),
    '',
    ...messagesSection(typeOf),
    ...usageSection(),
    ...policySection(typeOf),
    ...eventsSection(typeOf),
    '## Operations',
    '',
    ...operations.flatMap(({ method, route, operation }) => renderOperation(doc, method, route, operation)),
  ];
  const options = (await prettier.resolveConfig(path.join(root, API_DOCS_PATH))) ?? {};
  return prettier.format(lines.join('\n'), { ...options, parser: 'markdown' });
}

const invokedDirectly =
  process.argv[1] !== undefined && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href;
if (invokedDirectly) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const page = await renderApiDocs(await openApiDocument(), root);
  writeFileSync(path.join(root, API_DOCS_PATH), page);
  console.log(`wrote ${API_DOCS_PATH} (${page.length} characters)`);
}
