/**
 * The "Policy" section of docs/API.md: every field a session's `policy` takes, nested objects
 * included, with its type, its default and what it does, and what each preset changes.
 *
 * The fields and their texts are read from @compactor/contract's `PolicyInputSchema` (its
 * `.describe()` texts), the defaults and presets from @compactor/core's resolved policies, so the
 * page cannot drift from what the API validates and applies: a field added without a description
 * fails `npm run docs:api` (and so the staleness test of generate-api-docs.test.ts).
 */
import { z } from 'zod';
import { POLICY_PRESET_NAMES, PolicyInputSchema } from '@compactor/contract';
import { DEFAULT_POLICY, POLICY_PRESETS, TRIGGER_DEFAULTS } from '@compactor/core';

type Schema = Record<string, unknown>;
type TypeOf = (schema: Schema) => string;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');
/** A value as the tables write it: JSON in a code span. */
const json = (value: unknown) => cell(`\`${JSON.stringify(value)}\``);
/** The heading anchor of a nested object's table (`### \`policy.pruning\`` → `#policypruning`). */
export const policyAnchor = (field: string) => `#policy${field.toLowerCase()}`;

/** The object schema a property holds (itself, or the object option of `object | null`). */
function objectOf(schema: Schema): { object: Schema; nullable: boolean } | null {
  if (isPlainObject(schema['properties'])) return { object: schema, nullable: false };
  const options = schema['anyOf'];
  if (!Array.isArray(options)) return null;
  const object = (options as Schema[]).find((option) => isPlainObject(option['properties']));
  return object ? { object, nullable: options.some((o: Schema) => o['type'] === 'null') } : null;
}

/** A field's type with its bounds spelled (`integer > 0`, `number > 0, ≤ 1`), table-safe. */
export function policyType(schema: Schema, typeOf: TypeOf): string {
  const options = schema['anyOf'];
  if (Array.isArray(options)) return options.map((o: Schema) => policyType(o, typeOf)).join(' \\| ');
  const type = schema['type'];
  if (Array.isArray(type)) return type.map((t) => policyType({ ...schema, type: t }, typeOf)).join(' \\| ');
  if (type !== 'integer' && type !== 'number') return cell(typeOf(schema));
  const bounds = [
    schema['minimum'] !== undefined ? `≥ ${String(schema['minimum'])}` : null,
    schema['exclusiveMinimum'] !== undefined ? `> ${String(schema['exclusiveMinimum'])}` : null,
    schema['maximum'] !== undefined && schema['maximum'] !== Number.MAX_SAFE_INTEGER
      ? `≤ ${String(schema['maximum'])}`
      : null,
    schema['exclusiveMaximum'] !== undefined ? `< ${String(schema['exclusiveMaximum'])}` : null,
  ].filter((bound) => bound !== null);
  return bounds.length > 0 ? `${type} ${bounds.join(', ')}` : type;
}

function describedBy(path: string, schema: Schema): string {
  const text = schema['description'];
  if (typeof text !== 'string' || text === '')
    throw new Error(
      `docs: policy.${path} has no .describe() text (packages/contract/src/policy.ts, policy-fields.ts)`,
    );
  return cell(text);
}

/** What `preset` changes relative to `base`, as `path: value` entries (a new trigger whole). */
export function presetDifferences(base: unknown, preset: unknown, path = ''): string[] {
  if (!isPlainObject(base) || !isPlainObject(preset)) {
    return JSON.stringify(base) === JSON.stringify(preset) ? [] : [`\`${path}: ${JSON.stringify(preset)}\``];
  }
  return Object.keys(preset).flatMap((key) => {
    if (path === '' && key === 'preset') return [];
    const at = path === '' ? key : `${path}.${key}`;
    const [from, to] = [base[key], preset[key]];
    // Another trigger kind is another rule: shown whole, not as field changes of the old one.
    if (key === 'trigger' && isPlainObject(from) && isPlainObject(to) && from['kind'] !== to['kind'])
      return [`\`${at}: ${JSON.stringify(to)}\``];
    return presetDifferences(from, to, at);
  });
}

/** The trigger's table: each field, the kinds it belongs to and each kind's default. */
function triggerRows(properties: Record<string, Schema>, typeOf: TypeOf): string[] {
  const kinds = Object.values(TRIGGER_DEFAULTS) as Array<Record<string, unknown>>;
  return Object.entries(properties).map(([name, property]) => {
    const defaults =
      name === 'kind'
        ? json(DEFAULT_POLICY.trigger.kind)
        : kinds
            .filter((defaults) => name in defaults)
            .map((defaults) => `${json(defaults[name])} (\`${String(defaults['kind'])}\`)`)
            .join(', ');
    return `| \`${name}\` | ${policyType(property, typeOf)} | ${defaults} | ${describedBy(`trigger.${name}`, property)} |`;
  });
}

/** The section's lines (markdown, formatted later with the rest of the page); `schema` for tests. */
export function policySection(typeOf: TypeOf, schema: z.ZodType = PolicyInputSchema): string[] {
  const input = z.toJSONSchema(schema, { io: 'input' }) as Schema;
  const properties = input['properties'] as Record<string, Schema>;
  const defaults = DEFAULT_POLICY as unknown as Record<string, unknown>;
  const top: string[] = [];
  const nested: string[] = [];
  for (const [name, property] of Object.entries(properties)) {
    const inner = objectOf(property);
    const type = inner
      ? `object ([fields](${policyAnchor(name)}))${inner.nullable ? ' \\| null' : ''}`
      : policyType(property, typeOf);
    const fallback = isPlainObject(defaults[name]) ? 'below' : json(defaults[name]);
    top.push(`| \`${name}\` | ${type} | ${fallback} | ${describedBy(name, property)} |`);
    if (!inner) continue;
    const fields = inner.object['properties'] as Record<string, Schema>;
    const required = new Set((inner.object['required'] as string[] | undefined) ?? []);
    const group = defaults[name];
    const rows =
      name === 'trigger'
        ? triggerRows(fields, typeOf)
        : Object.entries(fields).map(([field, schema]) => {
            const value = isPlainObject(group) ? json(group[field]) : required.has(field) ? 'required' : '';
            return `| \`${field}\` | ${policyType(schema, typeOf)} | ${value} | ${describedBy(`${name}.${field}`, schema)} |`;
          });
    nested.push(
      `### \`policy.${name}\``,
      '',
      describedBy(name, property) + '.',
      '',
      '| field | type | default | |',
      '| --- | --- | --- | --- |',
      ...rows,
      '',
    );
  }
  const presets = POLICY_PRESET_NAMES.filter((name) => name !== 'default').map((name) => {
    const changes = presetDifferences(POLICY_PRESETS.default, POLICY_PRESETS[name]);
    return `| \`${name}\` | ${cell(changes.join(', '))} |`;
  });
  return [
    '## Policy',
    '',
    'A session’s `policy` (`POST /v1/sessions`, `PATCH /v1/sessions/{id}`) is a `preset` and overrides',
    'of any of its fields, nested objects field by field; every field is optional and an unknown one',
    'is a 400. The session answers with the overrides as sent (`policy`) and the policy in force',
    '(`effectivePolicy`: the preset’s values with the overrides laid over them). A `PATCH` merges its',
    'overrides into the stored ones; a new `trigger.kind` starts from that kind’s defaults.',
    '',
    '| field | type | default | |',
    '| --- | --- | --- | --- |',
    ...top,
    '',
    '### Presets',
    '',
    'The defaults above are the `default` preset. The others take their rules from the coding agents',
    'Compactor reproduces ([docs/PRESETS.md](PRESETS.md) lists each rule and its source); what each',
    'changes:',
    '',
    '| preset | changes from `default` |',
    '| --- | --- |',
    ...presets,
    '',
    ...nested,
  ];
}
