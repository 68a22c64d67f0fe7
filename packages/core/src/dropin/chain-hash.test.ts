import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, chainHash } from './chain-hash';
import { dropInMessageId } from './elements';
import { openAIChatElements } from './openai-elements';

const hashes = (messages: unknown) => openAIChatElements(messages).map((element) => element.hash);

describe('canonicalJson', () => {
  it('sorts keys at every depth and leaves undefined fields out', () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { f: 1, e: undefined }], c: null } })).toBe(
      '{"a":{"c":null,"d":[2,{"f":1}]},"b":1}',
    );
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
