import {
  resolvePolicy,
  statusFromEstimate,
  type ModelInfo,
  type Policy,
  type PolicyInput,
} from '@compactor/core';
import {
  estimateFromStats,
  sessionStatusInputs,
  type CompactionRow,
  type ContextTokenStats,
  type DbOrTx,
  type SessionRow,
  sessionModel,
} from '@compactor/db';
import type { SessionStatus as StatusView } from '@compactor/contract';
import { BoundedMap } from './bounded-map';
import { compactionView } from './views';

/** The status and the numbers behind it (the auto trigger decides on the same numbers). */
export interface StatusSnapshot {
  status: StatusView;
  stats: ContextTokenStats;
  policy: Policy;
  model: ModelInfo;
  active: CompactionRow | null;
  /** The most recently finished compaction, whatever its outcome. */
  lastFinished: CompactionRow | null;
  /** The compaction that defines the context view now. */
  latestCompleted: CompactionRow | null;
}

/**
 * A session's status from stored counts and the last reported usage (the hybrid estimate), in a
 * few indexed queries: the history itself is never re-read.
 */
export async function statusSnapshot(db: DbOrTx, session: SessionRow): Promise<StatusSnapshot> {
  const policy = resolvedPolicy(session.policy as PolicyInput);
  const model = sessionModel(session);
  const {
    stats,
    active,
    lastFinished: last,
    latestCompleted,
  } = await sessionStatusInputs(db, session.pk, { pinSystemMessages: policy.pinSystemMessages });
  const status = statusFromEstimate({
    tokens: estimateFromStats(stats, policy.estimate),
    report: stats.report,
    model,
    policy,
  });
  return {
    status: {
      ...status,
      contextWindow: model.contextWindow,
      estimate: stats.report && policy.estimate === 'hybrid' ? 'hybrid' : 'stored',
      contextMessages: stats.contextMessages,
      messagesSinceCompaction: stats.messagesSinceCompaction,
      activeCompaction: active ? compactionView(active, session.id) : null,
      lastCompaction: last ? compactionView(last, session.id) : null,
    },
    stats,
    policy,
    model,
    active,
    lastFinished: last,
    latestCompleted,
  };
}

/**
 * Resolved policies by their stored JSON: a session's policy is parsed and merged with its preset
 * on every append otherwise (a tenth of a millisecond), and sessions share few distinct policies.
 * Bounded: emptied when full. Frozen, since every append shares one.
 */
const resolvedPolicies = new BoundedMap<string, Policy>(1_000);

function resolvedPolicy(input: PolicyInput): Policy {
  const key = JSON.stringify(input);
  let policy = resolvedPolicies.get(key);
  if (!policy) {
    policy = deepFreeze(resolvePolicy(input));
    resolvedPolicies.set(key, policy);
  }
  return policy;
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/** A session's status (see {@link statusSnapshot}). */
export async function sessionStatus(db: DbOrTx, session: SessionRow): Promise<StatusView> {
  return (await statusSnapshot(db, session)).status;
}
