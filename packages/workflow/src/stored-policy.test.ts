import { describe, expect, it } from 'vitest';
import { PolicyError, resolvePolicy, type PolicyInput } from '@compactor/core';
import { resolveStoredPolicy } from './stored-policy';

describe('resolveStoredPolicy (a session’s stored input, resolved on every attempt and prune job)', () => {
  it('resolves as resolvePolicy does, once per distinct input, into a frozen policy', () => {
    const input: PolicyInput = { preset: 'opal', pruning: { protectTokens: 12_345 } };
    const policy = resolveStoredPolicy(input);
    expect(policy).toEqual(resolvePolicy(input));
    // The same input (a fresh object, as every row read gives) comes back as the same object.
    expect(resolveStoredPolicy(structuredClone(input))).toBe(policy);
    expect(resolveStoredPolicy({ preset: 'opal', pruning: { protectTokens: 12_346 } })).not.toBe(policy);
    expect(Object.isFrozen(policy)).toBe(true);
    expect(Object.isFrozen(policy.pruning)).toBe(true);
    expect(() => {
      (policy.pruning as { protectTokens: number }).protectTokens = 1;
    }).toThrow(TypeError);
  });

  it('throws for an input that does not resolve, every time', () => {
    const broken = { trigger: { kind: 'ratio', ratio: 7 } } as PolicyInput;
    expect(() => resolveStoredPolicy(broken)).toThrow(PolicyError);
    expect(() => resolveStoredPolicy(broken)).toThrow(PolicyError);
  });

  it('stays correct past its bound of distinct inputs', () => {
    const first = resolveStoredPolicy({ pruning: { protectTokens: 100_000 } });
    for (let i = 1; i <= 1_500; i++) {
      expect(resolveStoredPolicy({ pruning: { protectTokens: 100_000 + i } }).pruning.protectTokens).toBe(
        100_000 + i,
      );
    }
    expect(resolveStoredPolicy({ pruning: { protectTokens: 100_000 } })).toEqual(first);
  });
});
