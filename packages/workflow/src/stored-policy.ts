import { resolveFrozenPolicy, type Policy, type PolicyInput } from '@compactor/core';

/** Policies resolved from stored input, by the input's JSON; emptied when full. */
const storedPolicies = new Map<string, Policy>();
const STORED_POLICIES_LIMIT = 1_000;

/**
 * The policy of a session's stored input, which every compaction attempt and prune job resolves
 * again: sessions share few distinct inputs, and resolving one costs a few tenths of a
 * millisecond of the worker's CPU. The result is shared, so it is frozen (core
 * `resolveFrozenPolicy`). An input that does not resolve throws every time; nothing is kept for it.
 */
export function resolveStoredPolicy(input: PolicyInput = {}): Policy {
  const key = JSON.stringify(input);
  let policy = storedPolicies.get(key);
  if (!policy) {
    policy = resolveFrozenPolicy(input);
    if (storedPolicies.size >= STORED_POLICIES_LIMIT) storedPolicies.clear();
    storedPolicies.set(key, policy);
  }
  return policy;
}
