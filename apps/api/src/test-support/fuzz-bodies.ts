/**
 * What the fuzz suite (`fuzz.test.ts`) sends: valid request bodies of every route, the same with a
 * field (known or made up) replaced by a hostile value, and the ways a body goes on the wire.
 * The hostile values themselves are in `fuzz.ts`.
 */
import fc from 'fast-check';
import { TENANT_A_KEY, TENANT_B_KEY } from './api';
import {
  asJson,
  freshId,
  hostileDate,
  hostileId,
  hostileJsonObject,
  hostileJsonValue,
  hostileNumber,
  hostileString,
  hostileWire,
  pathSegment,
  RawJson,
  safeString,
  validCount,
  wideArray,
} from './fuzz';

/** Mostly tenant A; sometimes tenant B (another tenant's resources are 404), no key, a bad key. */
export const key = fc.oneof(
  { weight: 8, arbitrary: fc.constant(TENANT_A_KEY) },
  { weight: 1, arbitrary: fc.constantFrom<string | null>(TENANT_B_KEY, null, 'wrong-key', '\u00A0') },
);

/** Anything a field may be sent as. */
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  hostileString,
  hostileId('fz-h'),
  hostileNumber,
  hostileDate,
  hostileJsonValue,
  hostileJsonObject,
  fc.constantFrom(undefined, null, true, [], {}),
);

/** `value` with `path` set to `replacement` (copies along the path; `undefined` removes the field). */
function setPath(value: unknown, path: (string | number)[], replacement: unknown): unknown {
  if (path.length === 0) return replacement;
  const [head, ...rest] = path as [string | number, ...(string | number)[]];
  const container = (
    Array.isArray(value)
      ? [...value]
      : value !== null && typeof value === 'object' && !(value instanceof RawJson)
        ? { ...value }
        : {}
  ) as Record<string | number, unknown>;
  container[head] = setPath(container[head], rest, replacement);
  return container;
}

/** A valid body, or one with a field (known or made up) replaced by a hostile value. */
export function mutated<T>(valid: fc.Arbitrary<T>, paths: (string | number)[][]): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 2, arbitrary: valid },
    {
      weight: 3,
      arbitrary: fc
        .tuple(valid, fc.constantFrom(...paths, ['unknownField']), hostileValue)
        .map(([body, path, replacement]) => setPath(body, path, replacement)),
    },
  );
}

/** How a body is sent: mostly as JSON, sometimes with a wrong content type or not JSON at all. */
export const onTheWire = (body: fc.Arbitrary<unknown>) =>
  body.chain((value) =>
    fc.oneof(
      { weight: 6, arbitrary: fc.constant({ body: value, wire: asJson(value) }) },
      { weight: 1, arbitrary: hostileWire(value).map((wire) => ({ body: undefined, wire })) },
    ),
  );

/** A session id for a path: mostly `known`, else hostile, percent-encoded or raw. */
export const target = (known: () => string) =>
  fc
    .tuple(
      fc.oneof({ weight: 3, arbitrary: fc.constant(null) }, { weight: 2, arbitrary: hostileId('fz-t') }),
      fc.boolean(),
    )
    .map(([id, raw]) => {
      const value = id ?? known();
      return { id: value, segment: pathSegment(value, id !== null && raw) };
    });

// ---- valid bodies ---------------------------------------------------------------------------

export const text = safeString;
export const nonEmptyText = safeString.map((s) => (s === '' ? 'x' : s));

const validModel = fc.record(
  {
    id: fc.oneof(fc.constantFrom('gpt-4o', 'claude-sonnet-4', 'unknown-model'), nonEmptyText),
    provider: nonEmptyText,
    contextWindow: fc.oneof(validCount, fc.constantFrom(8_000, 128_000, 200_000)),
    maxOutputTokens: fc.constantFrom(0, 1_000, 4_096),
    inputLimit: fc.constantFrom(null, 1_024, 100_000),
  },
  { requiredKeys: ['id'] },
);

const validMetadata = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), {
  maxKeys: 4,
});

export const validSessionBody = fc.record(
  {
    id: freshId('fz-s'),
    model: validModel,
    policy: fc.constantFrom({}, { auto: false }, { pruning: { protectTokens: 30_000 } }),
    metadata: validMetadata,
  },
  { requiredKeys: ['model'] },
);

export const SESSION_PATHS = [
  ['id'],
  ['model'],
  ['model', 'id'],
  ['model', 'provider'],
  ['model', 'contextWindow'],
  ['model', 'maxOutputTokens'],
  ['model', 'inputLimit'],
  ['policy'],
  ['policy', 'auto'],
  ['policy', 'pruning', 'protectTokens'],
  ['metadata'],
  ['metadata', 'k'],
];

export const textPart = fc.record({ type: fc.constant('text'), text });
const filePart = fc.record(
  { type: fc.constant('file'), mime: nonEmptyText, url: nonEmptyText, filename: fc.option(text) },
  { requiredKeys: ['type', 'mime', 'url'] },
);
export const toolPart = fc.oneof(
  fc.record(
    {
      type: fc.constant('tool'),
      callId: freshId('call'),
      tool: nonEmptyText,
      status: fc.constant('pending'),
      input: fc.jsonValue({ maxDepth: 3 }),
    },
    { requiredKeys: ['type', 'callId', 'tool', 'status'] },
  ),
  fc.record({
    type: fc.constant('tool'),
    callId: freshId('call'),
    tool: nonEmptyText,
    status: fc.constant('completed'),
    input: fc.jsonValue({ maxDepth: 3 }),
    output: text,
  }),
);
const reasoningPart = fc.record({ type: fc.constant('reasoning'), text });

export const validUsage = fc.record(
  {
    input: validCount,
    output: validCount,
    reasoning: validCount,
    cacheRead: validCount,
    cacheWrite: validCount,
  },
  { requiredKeys: ['input', 'output'] },
);
export const FINISH = ['stop', 'tool-calls', 'length', 'content-filter', 'error', 'other'] as const;

const validMessage = fc.oneof(
  fc.record(
    {
      id: freshId('fz-m'),
      role: fc.constantFrom('user', 'system'),
      parts: fc.array(fc.oneof(textPart, filePart), { maxLength: 3 }),
      createdAt: hostileDate.filter((d) => typeof d === 'string' && /^(19[7-9]\d|[2-8]\d{3})-/.test(d)),
      metadata: validMetadata,
    },
    { requiredKeys: ['role', 'parts'] },
  ),
  fc.record(
    {
      id: freshId('fz-m'),
      role: fc.constant('assistant'),
      parts: fc.array(fc.oneof(textPart, reasoningPart, toolPart, filePart), { maxLength: 4 }),
      finish: fc.constantFrom(...FINISH),
      usage: validUsage,
      error: fc.oneof(text, fc.record({ message: text })),
      metadata: validMetadata,
    },
    { requiredKeys: ['role', 'parts'] },
  ),
);

const MESSAGE_PATHS = [
  ['id'],
  ['role'],
  ['parts'],
  ['parts', 0],
  ['parts', 0, 'type'],
  ['parts', 0, 'text'],
  ['parts', 0, 'callId'],
  ['parts', 0, 'input'],
  ['parts', 0, 'status'],
  ['parts', 0, 'output'],
  ['createdAt'],
  ['metadata'],
  ['metadata', 'k'],
  ['usage'],
  ['usage', 'input'],
  ['usage', 'cacheRead'],
  ['finish'],
  ['error'],
];

export const appendBody = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.array(validMessage, { minLength: 1, maxLength: 4 }).map((messages) => ({ messages })),
  },
  {
    weight: 5,
    arbitrary: fc
      .array(mutated(validMessage, MESSAGE_PATHS), { minLength: 1, maxLength: 4 })
      .map((messages) => ({ messages })),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      { messages: [] },
      { messages: {} },
      {
        messages: new RawJson(
          `[${Array(1_001).fill('{"role":"user","parts":[]}').join(',')}]`,
          '1001 messages',
        ),
      },
      {
        messages: [
          {
            role: 'user',
            parts: new RawJson(
              `[${Array(5_001).fill('{"type":"text","text":"a"}').join(',')}]`,
              '5001 parts',
            ),
          },
        ],
      },
      {
        messages: [
          {
            role: 'user',
            parts: new RawJson(
              `[${Array(10_000).fill('{"type":"text","text":"a"}').join(',')}]`,
              '10000 parts',
            ),
          },
        ],
      },
      { messages: [{ role: 'user', parts: [], metadata: { wide: wideArray(10_000) } }] },
      {
        messages: [
          {
            role: 'assistant',
            parts: [{ type: 'tool', callId: 'wide', tool: 't', status: 'pending', input: wideArray(10_000) }],
          },
        ],
      },
      {
        messages: [
          { id: 'dup', role: 'user', parts: [] },
          { id: 'dup', role: 'user', parts: [] },
        ],
      },
    ),
  },
);

/** Message fields as the history shows them, for comparison with what was sent. */
export function shown(message: Record<string, unknown>) {
  const parts = (message.parts as Record<string, unknown>[]).map((part) => {
    if (part.type === 'text' || part.type === 'reasoning') return { type: part.type, text: part.text };
    if (part.type === 'tool')
      return {
        type: part.type,
        callId: part.callId,
        tool: part.tool,
        status: part.status,
        // An omitted or null input is stored as {} (packages/db ingest: `part.input ?? {}`).
        input: part.input ?? {},
      };
    return { type: part.type, mime: part.mime, url: part.url, filename: part.filename ?? null };
  });
  return { role: message.role, parts, metadata: message.metadata };
}
