import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '@compactor/api';
import { API_DOCS_PATH, renderApiDocs, typeOf } from './generate-api-docs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

describe('docs/API.md', () => {
  it('is what `npm run docs:api` generates from the current OpenAPI document', async () => {
    const expected = await renderApiDocs(await openApiDocument(), root);
    const committed = readFileSync(path.join(root, API_DOCS_PATH), 'utf8');
    // On failure: run `npm run docs:api` and commit docs/API.md.
    expect(committed === expected, 'docs/API.md is stale: run `npm run docs:api`').toBe(true);
  });

  it('names every route and error code', async () => {
    const doc = (await openApiDocument()) as { paths: Record<string, Record<string, unknown>> };
    const page = readFileSync(path.join(root, API_DOCS_PATH), 'utf8');
    for (const [route, methods] of Object.entries(doc.paths)) {
      for (const method of Object.keys(methods))
        expect(page).toContain(`### ${method.toUpperCase()} ${route}`);
    }
    for (const code of ['validation_error', 'not_found', 'conflict', 'too_many_requests']) {
      expect(page).toContain(`\`${code}\``);
    }
  });
});

describe('the rendered page', () => {
  it('spells the session policy out field by field and links the fields whose shape has a section', async () => {
    const page = await renderApiDocs(await openApiDocument(), root);
    for (const heading of ['## Usage', '## Policy', '### `policy.pruning`', '### `policy.prepare`'])
      expect(page).toContain(`\n${heading}\n`);
    // A policy is never just "object": every route table that holds one points at its fields.
    const policyRows = page.split('\n').filter((line) => /^\| `(policy|effectivePolicy)` /.test(line));
    expect(policyRows.length).toBeGreaterThan(4);
    for (const row of policyRows) expect(row).toContain('see [Policy](#policy)');
    expect(page).toMatch(/^\| `usage` +\| UsageInput \\\| null, see \[Usage\]\(#usage\)/m);
  });
});

describe('typeOf', () => {
  it.each([
    [{ $ref: '#/components/schemas/Compaction' }, 'Compaction'],
    [{ anyOf: [{ $ref: '#/components/schemas/Compaction' }, { type: 'null' }] }, 'Compaction | null'],
    [{ type: 'array', items: { type: 'string' } }, 'string[]'],
    [{ type: 'integer', minimum: 0, maximum: 10 }, 'integer 0…10'],
    [{ type: ['string', 'null'] }, 'string | null'],
    [{ type: 'string', enum: ['a', 'b'] }, '"a" | "b"'],
    [{ type: 'string', format: 'date-time' }, 'string (date-time)'],
  ])('%j → %s', (schema, expected) => {
    expect(typeOf(schema)).toBe(expected);
  });
});
