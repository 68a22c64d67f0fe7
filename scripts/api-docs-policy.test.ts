import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { PolicyInputSchema } from '@compactor/contract';
import { DEFAULT_POLICY, POLICY_PRESETS } from '@compactor/core';
import { policySection, policyType, presetDifferences } from './api-docs-policy';
import { typeOf } from './generate-api-docs';

const page = policySection(typeOf).join('\n');
/** The rows of the first table after `heading`, by their first cell's field name. */
function rowsUnder(heading: string): Map<string, string> {
  const section = page.split(`${heading}\n`)[1]!.split('\n###')[0]!;
  const rows = section.split('\n').filter((line) => line.startsWith('| `'));
  return new Map(rows.map((row) => [/^\| `([^`]+)`/.exec(row)![1]!, row]));
}
const shapeOf = (schema: z.ZodType): z.ZodRawShape | null => {
  const inner = schema instanceof z.ZodOptional || schema instanceof z.ZodNullable ? schema.unwrap() : schema;
  if (inner instanceof z.ZodOptional || inner instanceof z.ZodNullable) return shapeOf(inner as z.ZodType);
  return inner instanceof z.ZodObject ? inner.shape : null;
};

describe('the Policy section of docs/API.md', () => {
  it('has a row for every policy field and every field of each nested object, with its description', () => {
    const top = rowsUnder('## Policy');
    expect([...top.keys()]).toEqual(Object.keys(PolicyInputSchema.shape));
    for (const [name, schema] of Object.entries(PolicyInputSchema.shape)) {
      const fields = shapeOf(schema as z.ZodType);
      if (fields === null) continue;
      expect(top.get(name), name).toContain(`[fields](#policy${name.toLowerCase()})`);
      const nested = rowsUnder(`### \`policy.${name}\``);
      expect([...nested.keys()], name).toEqual(Object.keys(fields));
      for (const row of nested.values()) expect(row, row).toMatch(/ \| [^|]*[a-z][^|]* \|$/);
    }
    expect(top.size).toBeGreaterThan(15);
  });

  it('shows the defaults core resolves, each trigger kind’s own, and what the prepare draft requires', () => {
    expect(rowsUnder('## Policy').get('estimate')).toContain(`\`"${DEFAULT_POLICY.estimate}"\``);
    expect(rowsUnder('### `policy.pruning`').get('protectTokens')).toContain('`40000`');
    expect(rowsUnder('### `policy.keepRecent`').get('maxTokens')).toContain('`null`');
    expect(rowsUnder('### `policy.trigger`').get('ratio')).toContain('`0.8` (`ratio`)');
    expect(rowsUnder('### `policy.trigger`').get('reserveRatio')).toContain('`0.25` (`reserve`)');
    expect(rowsUnder('### `policy.prepare`').get('atRatio')).toContain('| required |');
    expect(rowsUnder('## Policy').get('prepare')).toContain('object ([fields](#policyprepare)) \\| null');
  });

  it('lists what each preset changes, a new trigger kind whole', () => {
    expect(presetDifferences(POLICY_PRESETS.default, POLICY_PRESETS.opencode)).toEqual([
      '`pruning.cacheAware: false`',
      '`continueMessage: "Continue if you have next steps"`',
      '`summarizer.prompt: "opencode"`',
    ]);
    expect(presetDifferences(POLICY_PRESETS.default, POLICY_PRESETS.topic)).toContain(
      '`trigger: {"kind":"tokens","tokens":6000}`',
    );
    expect(presetDifferences(POLICY_PRESETS.default, POLICY_PRESETS.default)).toEqual([]);
    for (const preset of ['opencode', 'opal', 'klaude', 'topic'])
      expect(page).toMatch(new RegExp(`^\\| \`${preset}\` \\| \`\\S`, 'm'));
  });

  it('refuses a field without a description', () => {
    const schema = z.strictObject({ pruning: z.strictObject({ colour: z.string() }).partial().optional() });
    expect(() => policySection(typeOf, schema)).toThrow(/policy\.(pruning|pruning\.colour) has no/);
  });

  it.each([
    [{ type: 'integer', exclusiveMinimum: 0, maximum: Number.MAX_SAFE_INTEGER }, 'integer > 0'],
    [{ type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER }, 'integer ≥ 0'],
    [{ type: 'number', exclusiveMinimum: 0, maximum: 1 }, 'number > 0, ≤ 1'],
    [{ type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 }, 'number > 0, < 1'],
    [{ anyOf: [{ type: 'integer', exclusiveMinimum: 0 }, { type: 'null' }] }, 'integer > 0 \\| null'],
    [{ type: ['boolean', 'null'] }, 'boolean \\| null'],
    [{ type: 'string', enum: ['a', 'b'] }, '"a" \\| "b"'],
  ])('types %j as %s', (schema, expected) => {
    expect(policyType(schema, typeOf)).toBe(expected);
  });
});
