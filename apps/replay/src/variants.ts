/**
 * The variants a replay compares: every `--policy` × every `--summarizer-model`. A policy is a
 * preset name or a JSON file with a policy input; both are checked with core's resolver before
 * anything starts, so a typo fails in a second, not after the services are up.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { POLICY_PRESET_NAMES, resolvePolicy, type PolicyInput } from '@compactor/core';
import type { Variant } from './report/model';
import { UsageError } from './options';

function loadPolicy(spec: string): { label: string; policy: PolicyInput } {
  if ((POLICY_PRESET_NAMES as readonly string[]).includes(spec)) {
    return { label: spec, policy: { preset: spec as PolicyInput['preset'] } };
  }
  if (!spec.endsWith('.json')) {
    throw new UsageError(
      `--policy ${spec}: not a preset (${POLICY_PRESET_NAMES.join(', ')}) nor a .json file`,
    );
  }
  let policy: PolicyInput;
  try {
    policy = JSON.parse(readFileSync(spec, 'utf8')) as PolicyInput;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new UsageError(
      `--policy ${spec}: ${code ? `cannot read it (${code})` : `not JSON (${(error as Error).message})`}`,
    );
  }
  return { label: basename(spec), policy };
}

export function resolveVariants(policies: readonly string[], models: readonly string[]): Variant[] {
  const loaded = policies.length === 0 ? [{ label: 'default', policy: {} }] : policies.map(loadPolicy);
  for (const { label, policy } of loaded) {
    try {
      resolvePolicy(policy);
    } catch (error) {
      throw new UsageError(`--policy ${label}: ${(error as Error).message}`);
    }
  }
  const labels = new Set(loaded.map((p) => p.label));
  if (labels.size < loaded.length) throw new UsageError('the same --policy is given twice');
  const modelList = models.length === 0 ? [null] : [...new Set(models)];
  return loaded.flatMap(({ label, policy }) =>
    modelList.map((model) => ({
      label: model && modelList.length > 1 ? `${label} · ${model}` : label,
      policyLabel: label,
      policy: policy as Record<string, unknown>,
      summarizerModel: model,
    })),
  );
}
