import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, chainHash } from './chain-hash';
import { dropInMessageId } from './elements';
import { openAIChatElements } from './openai-elements';

type Json = Record<string, unknown>;

const hashes = (messages: unknown) => openAIChatElements(messages).map((element) => element.hash);

describe('canonicalJson', () => {
  it('sorts keys at every depth and leaves undefined fields out', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { f: 1, e: undefined }], c: null } })).toBe(
      '{"a":{"c":null,"d":[2,{"f":1}]},"b":1}',
    );
  });

  it('serialises any JSON value as sorting every object does, whatever order its keys come in', () => {
    const sortedEverywhere = (value: unknown): unknown =>
      value === null || typeof value !== 'object'
        ? value
        : Array.isArray(value)
          ? value.map(sortedEverywhere)
          : Object.fromEntries(
              Object.entries(value)
                .filter(([, item]) => item !== undefined)
                .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
                .map(([key, item]) => [key, sortedEverywhere(item)]),
            );
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        expect(canonicalJson(value)).toBe(JSON.stringify(sortedEverywhere(value)));
      }),
    );
    // Integer-like keys (which objects list first), `__proto__` as a field, undefined in arrays.
    const tricky = JSON.parse('{"b":1,"10":2,"9":3,"__proto__":{"z":1,"a":2},"a":[null]}') as Json;
    expect(canonicalJson({ ...tricky, u: undefined, l: [undefined, { y: 1, x: undefined }] })).toBe(
      JSON.stringify(sortedEverywhere({ ...tricky, l: [undefined, { y: 1 }] })),
    );
    expect(canonicalJson({ at: new Date(0) })).toBe('{"at":{}}');
  });

  it("takes the element readers' canonical forms as they are: their keys come sorted", () => {
    const elements = openAIChatElements([
      { role: 'system', content: 'be brief' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'read a' },
          { type: 'image_url', image_url: { url: 'https://x/y.png' } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'read', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'a' },
      { role: 'assistant', content: 'done' },
    ]);
    for (const { canonical } of elements) expect(canonicalJson(canonical)).toBe(JSON.stringify(canonical));
  });

  it('refuses nesting deeper than any canonical form instead of exhausting the stack', () => {
    expect(() => canonicalJson(JSON.parse('['.repeat(10_000) + ']'.repeat(10_000)))).toThrow(RangeError);
  });
});

describe('the chain', () => {
  const messageArb = fc.oneof(
    fc.record({ role: fc.constantFrom('user', 'system', 'developer'), content: fc.string() }),
    fc.record({
      role: fc.constant('tool'),
      tool_call_id: fc.constantFrom('call_1', 'call_2'),
      content: fc.string(),
    }),
    fc.record({
      role: fc.constant('assistant'),
      content: fc.option(fc.string()),
      tool_calls: fc.constantFrom(undefined, [
        { id: 'call_1', type: 'function', function: { name: 'read', arguments: '{}' } },
      ]),
    }),
  );

  it('is prefix-stable: a request that extends another shares all of its hashes', () => {
    fc.assert(
      fc.property(fc.array(messageArb, { minLength: 1, maxLength: 12 }), fc.nat(), (messages, cut) => {
        const prefix = messages.slice(0, cut % (messages.length + 1));
        expect(hashes(prefix)).toEqual(hashes(messages).slice(0, prefix.length));
      }),
    );
  });

  it('an edit at i changes the hash at i and every later one', () => {
    fc.assert(
      fc.property(fc.array(messageArb, { minLength: 1, maxLength: 12 }), fc.nat(), (messages, at) => {
        const i = at % messages.length;
        const edited = messages.map((m, k) =>
          k === i ? { role: 'user', content: `${canonicalJson(m)}!` } : m,
        );
        const before = hashes(messages);
        const after = hashes(edited);
        expect(after.slice(0, i)).toEqual(before.slice(0, i));
        for (let k = i; k < messages.length; k++) expect(after[k]).not.toBe(before[k]);
      }),
    );
  });

  it('starts from 32 zero bytes and names each message by position and hash', () => {
    const [element] = openAIChatElements([{ role: 'user', content: 'hi' }]);
    const expected = chainHash(null, element!.canonical);
    expect(element!.hash).toBe(expected);
    expect(expected).toMatch(/^[0-9a-f]{64}$/);
    expect(element!.message?.id).toBe(`dropin-0-${expected.slice(0, 16)}`);
    expect(dropInMessageId(7, expected)).toBe(`dropin-7-${expected.slice(0, 16)}`);
  });
});
