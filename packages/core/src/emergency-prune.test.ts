import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { emergencyRoomTokens, selectEmergencyPrune } from './emergency-prune';
import type { Message, ToolPart } from './model';
import { POLICY_PRESETS, resolvePolicy } from './policy';
import { assistant, conversation, model, text, toolPart, user } from './test-support/builders';
import { messageTokens, PRUNED_OUTPUT_PLACEHOLDER_TOKENS as P, storedTokens } from './tokens';

const PRUNED_AT = '2025-01-01T00:00:00.000Z';

/** One assistant message per list of outputs (tokens), each part `outputTokens + 10` tokens. */
function tail(...outputs: (number | ToolPart)[][]): Message[] {
  return conversation(
    outputs.map((parts) =>
      assistant(parts.map((part) => (typeof part === 'number' ? toolPart('read', part) : part))),
    ),
  );
}
const tools = (messages: Message[], target: number, limit?: number, protectedTools?: string[]) =>
  selectEmergencyPrune(messages, {
    targetTokens: target,
    ...(limit === undefined ? {} : { limitTokens: limit }),
    ...(protectedTools === undefined ? {} : { protectedTools }),
  }).parts.map((part) => `${part.seq}:${part.outputTokens}`);

describe('selectEmergencyPrune', () => {
  it('the 128k-window session with a 150k output: clears it, keeps the call', () => {
    const messages = conversation([
      user('read the log', 300),
      assistant([text('reading', 100), toolPart('read', 150_000, { tokens: 150_020 })]),
    ]);
    expect(selectEmergencyPrune(messages, { targetTokens: 25_600 })).toEqual({
      parts: [{ messageId: 'm2', seq: 2, callId: 'call_2_0', tool: 'read', outputTokens: 150_000 }],
      savedTokens: 150_000 - P,
      tokensBefore: 150_420,
      tokensAfter: 420 + P,
      fits: true,
    });
  });

  it.each<[string, Message[], number, number | undefined, string[] | undefined, string[]]>([
    [
      'largest first, then the next largest',
      tail([5000, 40_000], [20_000]),
      20_000,
      undefined,
      undefined,
      ['1:40000', '2:20000'],
    ],
    ['ties: the older first', tail([10_000], [10_000]), 12_000, undefined, undefined, ['1:10000']],
    ['stops as soon as it fits', tail([30_000, 1000], [2000]), 5000, undefined, undefined, ['1:30000']],
    ['already fits: nothing', tail([1000]), 5000, undefined, undefined, []],
    [
      'protected tools go last',
      tail([toolPart('skill', 50_000), 20_000]),
      30_000,
      undefined,
      ['skill'],
      ['1:20000', '1:50000'],
    ],
    [
      'protected tools are spared when the others suffice',
      tail([toolPart('skill', 50_000), 20_000]),
      50_100,
      undefined,
      ['skill'],
      ['1:20000'],
    ],
    [
      'skips pruned, errored, running and placeholder-sized outputs',
      tail([
        toolPart('read', 9000, { compactedAt: PRUNED_AT }),
        toolPart('bash', 0, { status: 'error', tokens: 9000 }),
        toolPart('bash', 0, { status: 'running', tokens: 9000 }),
        toolPart('read', P),
        9000,
      ]),
      0,
      undefined,
      undefined,
      ['1:9000'],
    ],
    // The target (5000) cannot be reached: 30,000 of user text stays. Only fitting 40,000 matters.
    [
      'an unreachable target: clears only what the limit needs',
      conversation([user('log', 30_000), assistant([toolPart('read', 8000), toolPart('read', 6000)])]),
      5000,
      40_000,
      undefined,
      ['2:8000'],
    ],
  ])('%s', (_name, messages, target, limit, protectedTools, expected) => {
    expect(tools(messages, target, limit, protectedTools)).toEqual(expected);
  });

  it('cannot fit: a huge user text stays however much is cleared', () => {
    const messages = conversation([user('pasted', 120_000), assistant([toolPart('read', 5000)])]);
    expect(selectEmergencyPrune(messages, { targetTokens: 25_600, limitTokens: 100_000 })).toMatchObject({
      parts: [{ outputTokens: 5000 }],
      tokensAfter: 120_000 + 10 + P,
      fits: false,
    });
  });

  it('a limit below the target is the goal', () => {
    expect(tools(tail([10_000], [10_000]), 30_000, 12_000)).toEqual(['1:10000']);
  });

  it('an empty tail fits anything', () => {
    expect(selectEmergencyPrune([], { targetTokens: 0 })).toEqual({
      parts: [],
      savedTokens: 0,
      tokensBefore: 0,
      tokensAfter: 0,
      fits: true,
    });
  });
});

describe('emergencyRoomTokens: usable − pinned − the largest summary', () => {
  it.each([
    ['gpt-4o, a 3000-token system prompt, 8192 for the summary', model(128_000, 16_384), 3000, 100_424],
    ['pinned messages larger than the room', model(8192, 8192), 10_000, 0],
    ['unlimited window', model(0, 4096), 3000, null],
  ])('%s', (_name, info, pinned, expected) => {
    expect(emergencyRoomTokens(info, POLICY_PRESETS.opencode, pinned)).toBe(expected);
  });

  it('follows the summarizer budget', () => {
    expect(emergencyRoomTokens(model(128_000, 16_384), resolvePolicy({ preset: 'topic' }), 0)).toBe(111_116);
  });
});

describe('selectEmergencyPrune properties', () => {
  const partArb = fc.record({
    tool: fc.constantFrom('read', 'bash', 'skill'),
    status: fc.constantFrom('completed', 'completed', 'completed', 'error', 'running'),
    outputTokens: fc.integer({ min: 0, max: 60_000 }),
    pruned: fc.integer({ min: 0, max: 5 }).map((n) => n === 0),
  });
  const tailArb = fc.array(
    fc.record({
      userTokens: fc.option(fc.integer({ min: 0, max: 40_000 })),
      parts: fc.array(partArb, { maxLength: 3 }),
    }),
    { maxLength: 6 },
  );
  const build = (input: typeof tailArb extends fc.Arbitrary<infer T> ? T : never): Message[] =>
    conversation(
      input.flatMap(({ userTokens, parts }) => [
        ...(userTokens === null ? [] : [user('q', userTokens)]),
        assistant(
          parts.map((p) =>
            toolPart(p.tool, p.outputTokens, {
              status: p.status as ToolPart['status'],
              compactedAt: p.pruned && p.status === 'completed' ? PRUNED_AT : null,
            }),
          ),
        ),
      ]),
    );

  it('clears only completed unpruned outputs, accounts exactly, and fits iff it says so', () => {
    fc.assert(
      fc.property(
        tailArb,
        fc.integer({ min: 0, max: 100_000 }),
        fc.option(fc.integer({ min: 0, max: 150_000 })),
        (input, targetTokens, limitTokens) => {
          const messages = build(input);
          const selection = selectEmergencyPrune(messages, {
            targetTokens,
            limitTokens,
            protectedTools: ['skill'],
          });
          const chosen = new Set(selection.parts.map((part) => `${part.seq}/${part.callId}`));
          const after = messages.map((message) => ({
            ...message,
            parts: message.parts.map((part) => {
              if (part.type !== 'tool' || !chosen.has(`${message.seq}/${part.callId}`)) return part;
              expect(part.status).toBe('completed');
              expect(part.compactedAt).toBeNull();
              return { ...part, compactedAt: PRUNED_AT };
            }),
          }));
          expect(selection.tokensBefore).toBe(storedTokens(messages));
          expect(selection.tokensAfter).toBe(after.reduce((sum, m) => sum + messageTokens(m), 0));
          expect(selection.savedTokens).toBe(selection.tokensBefore - selection.tokensAfter);
          const limit = limitTokens ?? targetTokens;
          expect(selection.fits).toBe(selection.tokensAfter <= limit);
          // Greedy and minimal: without its last part the selection would not have stopped.
          if (selection.parts.length > 0) {
            const last = selection.parts.at(-1)!;
            expect(selection.tokensAfter + last.outputTokens - P).toBeGreaterThan(
              Math.min(targetTokens, limit),
            );
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
