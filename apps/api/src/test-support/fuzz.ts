import fc from 'fast-check';

/**
 * Generators for the API fuzz suite (`src/fuzz.test.ts`): the hostile input classes (NUL, lone
 * surrogates, astral characters, NBSP, integers around 2^31-1, out-of-range dates, deep and wide
 * JSON, long ids, non-JSON bodies), mixed with valid values so that the 2xx paths run too.
 */

/** A JSON value already serialized (deep or wide values are built as text, never recursively). */
export class RawJson {
  constructor(
    readonly text: string,
    readonly label: string,
  ) {}
  toString(): string {
    return `RawJson(${this.label})`;
  }
}

/** Serializes a body that may hold {@link RawJson} values; `undefined` fields are left out. */
export function toJson(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value))
    return `[${value.map((item) => toJson(item === undefined ? null : item)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const fields = Object.entries(value).filter(([, item]) => item !== undefined);
    return `{${fields.map(([key, item]) => `${JSON.stringify(key)}:${toJson(item)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** What the server should store for a value sent as {@link toJson} (e.g. -0 becomes 0). */
export function asSent(value: unknown): unknown {
  return JSON.parse(toJson(value));
}

/** `{"k":{"k":…1…}}`, `depth` objects deep, built iteratively. */
export function deepObject(depth: number): RawJson {
  return new RawJson(`${'{"k":'.repeat(depth)}1${'}'.repeat(depth)}`, `object depth ${depth}`);
}

/** `[[[…]]]`, `depth` arrays deep. */
export function deepArray(depth: number): RawJson {
  return new RawJson(`${'['.repeat(depth)}${']'.repeat(depth)}`, `array depth ${depth}`);
}

/** An array of `width` small values. */
export function wideArray(width: number): RawJson {
  return new RawJson(
    `[${Array.from({ length: width }, (_, i) => i % 10).join(',')}]`,
    `array width ${width}`,
  );
}

const HOSTILE_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\uD800',
  'x\uDC00y',
  '\uDBFF\uDFFF',
  '😀',
  '👩‍👩‍👧‍👦',
  '𝕏',
  '\u00A0',
  'a\u00A0b\u00A0',
  '\u200B\uFEFF',
  '\r\n\t',
  '%00',
  '%zz',
  '../../etc/passwd',
  '<script>',
  "'; drop table sessions; --",
  '\\u0000',
  'NaN',
  '__proto__',
];

/** Any UTF-16 code unit, lone surrogates included. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit));

/** Strings of the hostile classes, random Unicode and random UTF-16 (lone surrogates, NUL). */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...HOSTILE_STRINGS),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: codeUnit, maxLength: 20 }),
  fc.string({ maxLength: 20 }),
  fc
    .constantFrom(...HOSTILE_STRINGS)
    .chain((bad) =>
      fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 10 })).map(([a, b]) => `${a}${bad}${b}`),
    ),
);

/** Text that Postgres stores as sent: no NUL, no lone surrogate (emoji, NBSP and the rest allowed). */
export const safeString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }).map((s) => s.replaceAll('\u0000', '')),
  fc.constantFrom('😀', '👩‍👩‍👧‍👦', '\u00A0', 'a\u00A0b', '𝕏', 'hello world', '\uDBFF\uDFFF', ''),
);

const INT4_MAX = 2_147_483_647;

/** Numbers at and past the `integer` range, negative, fractional, huge; and number-like strings. */
export const hostileNumber: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    0,
    1,
    -1,
    INT4_MAX - 1,
    INT4_MAX,
    INT4_MAX + 1,
    2 ** 32,
    -(2 ** 31),
    -(2 ** 31) - 1,
    Number.MAX_SAFE_INTEGER,
    Number.MAX_SAFE_INTEGER + 2,
    1e308,
    -1e308,
    5e-324,
    0.5,
    1.5,
    -0,
  ),
  fc.constantFrom('NaN', 'Infinity', '-Infinity', '1e3', '0x10', '12', '', null, true, [], {}),
  fc.integer(),
  fc.integer({ min: 0, max: 200_000 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** A count the API must accept: 0 … 2^31-1. */
export const validCount = fc.oneof(
  fc.integer({ min: 0, max: 100_000 }),
  fc.constantFrom(0, INT4_MAX - 1, INT4_MAX),
);

/** Dates: the storable range's edges, past them, offsets that cross year 9999, garbage. */
export const hostileDate: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom(
    '0000-01-01T00:00:00Z',
    '1969-12-31T23:59:59.999Z',
    '1970-01-01T00:00:00Z',
    '1970-01-01T00:00:00+01:00',
    '9999-12-31T23:59:59.999Z',
    '9999-12-31T23:59:59-23:59',
    '9999-12-31T23:59:59+23:59',
    '2024-02-30T00:00:00Z',
    '2024-01-01T00:00:00',
    '2024-01-01',
    '2024-01-01T25:00:00Z',
    '2024-01-01T00:00:00.123456789Z',
    '+275760-09-13T00:00:00Z',
    'yesterday',
    '',
    '\u0000',
    0,
    -1,
    1e308,
    null,
  ),
  fc
    .date({ min: new Date(Date.UTC(1970, 0, 1)), max: new Date(Date.UTC(9999, 11, 31)), noInvalidDate: true })
    .map((d) => d.toISOString()),
  hostileString,
);

/** Free-form JSON: small valid objects, hostile strings and keys, and deep and wide values. */
export const hostileJsonValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  {
    weight: 2,
    arbitrary: fc.dictionary(hostileString, fc.oneof(hostileString, hostileNumber), { maxKeys: 4 }),
  },
  { weight: 1, arbitrary: fc.array(hostileString, { maxLength: 4 }) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      deepObject(62),
      deepObject(63),
      deepObject(64),
      deepObject(65),
      deepObject(100),
      deepArray(64),
      deepArray(100),
      deepObject(10_000),
      deepArray(10_000),
      wideArray(10_000),
    ),
  },
);

/** A JSON object (metadata): valid ones and hostile ones. */
export const hostileJsonObject: fc.Arbitrary<unknown> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
  },
  { weight: 2, arbitrary: fc.dictionary(hostileString, hostileJsonValue, { maxKeys: 3 }) },
  { weight: 1, arbitrary: hostileJsonValue },
);

/** Id characters that need percent-encoding in a path (and a few that do not). */
const ID_CHARS = fc.constantFrom(
  'a',
  'Z',
  '9',
  '-',
  '_',
  '.',
  '~',
  '%',
  '/',
  '?',
  '#',
  '&',
  '+',
  '=',
  ':',
  '"',
  '\\',
);

let idCounter = 0;
/** A fresh valid id: unique within the run, so a create is a create. */
export const freshId = (prefix: string) => fc.constant(null).map(() => `${prefix}-${(idCounter += 1)}`);

/** Ids: fresh valid ones, the length boundaries (199/200/201/1000, percent-encoding characters), hostile strings. */
export const hostileId = (prefix: string): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 3, arbitrary: freshId(prefix) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fc.constantFrom(199, 200, 201, 1000), fc.array(ID_CHARS, { minLength: 8, maxLength: 8 }))
        .map(([length, chars]) => {
          const head = `${prefix}-${(idCounter += 1)}-${chars.join('')}`;
          return (head + 'x'.repeat(length)).slice(0, length);
        }),
    },
    { weight: 2, arbitrary: hostileString },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 30 }) },
  );

/** A path segment for an id: percent-encoded as a client would, or raw and malformed. */
export function pathSegment(id: string, raw: boolean): string {
  if (!raw) return encodeURIComponent(id.replace(/[\uD800-\uDFFF]/g, '\uFFFD'));
  return id.replace(/[^\x21-\x7e]/g, (c) => encodeURIComponent(c.replace(/[\uD800-\uDFFF]/g, '\uFFFD')));
}

/** How a body goes on the wire: JSON (possibly with a wrong content type) or not JSON at all. */
export interface WireBody {
  payload?: string;
  contentType?: string;
}

export const asJson = (body: unknown): WireBody => ({
  payload: toJson(body),
  contentType: 'application/json',
});

/** Wrong content types and bodies that are not JSON (or not an object). */
export const hostileWire = (body: unknown): fc.Arbitrary<WireBody> =>
  fc.oneof(
    fc.constantFrom<WireBody>(
      {},
      { payload: '', contentType: 'application/json' },
      { payload: 'null', contentType: 'application/json' },
      { payload: '[]', contentType: 'application/json' },
      { payload: '"text"', contentType: 'application/json' },
      { payload: '{', contentType: 'application/json' },
      { payload: '{"a":1}}', contentType: 'application/json' },
      { payload: '\u0000', contentType: 'application/json' },
      { payload: '{"__proto__":{"x":1}}', contentType: 'application/json' },
      { payload: '{"constructor":{"prototype":{"x":1}}}', contentType: 'application/json' },
      { payload: 'a=1&b=2', contentType: 'application/x-www-form-urlencoded' },
      { payload: 'hello', contentType: 'text/plain' },
      { payload: '<xml/>', contentType: 'application/xml' },
      { payload: '--x\r\n\r\n--x--', contentType: 'multipart/form-data; boundary=x' },
      { payload: '{}', contentType: 'application/json; charset=utf-16' },
      { payload: '{}', contentType: 'APPLICATION/JSON' },
      { payload: '{}', contentType: 'application/json;;;' },
      { payload: '{}', contentType: '' },
    ),
    fc
      .constantFrom('text/plain', 'application/octet-stream', 'application/json', 'application/vnd.api+json')
      .map((contentType) => ({ payload: toJson(body), contentType })),
  );
