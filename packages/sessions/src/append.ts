import { DEFAULT_POLICY, type PolicyInput } from '@compactor/core';
import { resolveStoredPolicy } from '@compactor/workflow';
import {
  appendToSession,
  sessionStatusInputsSql,
  statusInputsFromRows,
  type AppendedMessage,
  type SessionRow,
} from '@compactor/db';
import { Conflict, SessionNotFound } from './errors';
import type { SessionResources } from './resources';
import { BoundedMap } from './bounded-map';
import type { PrefetchedStatus } from './status';
import type { AppendSource, PreparedAppend } from './append-sources';
import { appendedUsagePath, checkUsageReports } from './usage-check';

/** Sessions this process keeps what it knows of before it starts forgetting (emptied when full). */
const KNOWN_SESSIONS_MAX = 10_000;

/** What this process learnt of a session at its last append here. */
export interface KnownSession {
  /** The model, whose encoding counts the next batch. */
  modelId: string;
  /** Its context window, which bounds the usage a batch may report (see `checkUsageReports`). */
  contextWindow: number;
  pk: number;
  /** The session policy's pinning, which the status read after the append is written for. */
  pinSystemMessages: boolean;
}

/**
 * The sessions appended to in this process ({@link sessionKey} → what it knows of them), so the
 * next append can count its batch without looking the session up first and read the status in
 * the append's round trip. Only a guess: the append checks the model under the session's lock,
 * and the status read counts only for the session and pinning it was written for, so another
 * replica's change or a deleted and re-created session costs a second count or a second read,
 * never a wrong one.
 */
export class KnownSessions extends BoundedMap<string, KnownSession> {
  constructor() {
    super(KNOWN_SESSIONS_MAX);
  }
}

/** What {@link KnownSessions} keeps of a session row. */
export function knownSession(session: SessionRow): KnownSession {
  return {
    modelId: session.modelId,
    contextWindow: session.contextWindow,
    pk: session.pk,
    pinSystemMessages: pinningOf(session),
  };
}

/** The session policy's pinning; a policy that no longer resolves fails the status read itself. */
function pinningOf(session: SessionRow): boolean {
  try {
    return resolveStoredPolicy(session.policy as PolicyInput).pinSystemMessages;
  } catch {
    return DEFAULT_POLICY.pinSystemMessages;
  }
}

/** How many times an append counts again for a model that changed under it before giving up. */
const MODEL_CHANGES_TOLERATED = 2;

/**
 * Appends a batch counted for `known.modelId` to the session the client names, in one statement
 * that also finds the session and returns it as locked. When its model changed since (a PATCH,
 * from any replica), nothing was written: the batch is counted again with the session's model
 * and sent again; a serialised batch that statement could not decide (a re-post, a call stored
 * unfinished) is sent again as its messages. The status inputs are read in the same round trip
 * (see {@link KnownSession}), and returned when they are the session's after this append
 * (unless `statusInRoundTrip` is false: the caller reads the status later, if at all).
 *
 * Before each write, the batch's usage reports are checked against the window of the model it
 * was counted for (`checkUsageReports`): a refused batch writes nothing. That window is the one
 * this process last saw the session with (its previous append here, or the lookup): after a PATCH
 * that changes only the window, one more append may be checked against the old one, and the
 * write's answer brings the new one for the next.
 */
export async function appendCounted(
  resources: SessionResources,
  target: { tenantId: string; id: string },
  known: KnownSession,
  prepared: PreparedAppend,
  {
    source,
    sessions,
    key,
    statusInRoundTrip = true,
  }: { source: AppendSource; sessions: KnownSessions; key: string; statusInRoundTrip?: boolean },
): Promise<{
  session: SessionRow;
  appended: AppendedMessage[];
  turnEnds: boolean[];
  statusInputs?: PrefetchedStatus;
}> {
  let modelId = known.modelId;
  let contextWindow = known.contextWindow;
  let { batch, turnEnds, usagePeaks } = prepared;
  const readAfter = {
    sessionPk: known.pk,
    query: sessionStatusInputsSql(known.pk, { pinSystemMessages: known.pinSystemMessages }),
  };
  for (let attempt = 0; ; attempt++) {
    checkUsageReports(usagePeaks, contextWindow, appendedUsagePath);
    const outcome = await appendToSession(
      resources.db,
      { ...target, modelId },
      batch,
      statusInRoundTrip ? { readAfter } : {},
    );
    if (outcome.kind === 'missing') {
      sessions.delete(key);
      throw new SessionNotFound();
    }
    sessions.set(key, knownSession(outcome.session));
    if (outcome.kind === 'appended') {
      const { session, appended } = outcome;
      return outcome.readAfter
        ? {
            session,
            appended,
            turnEnds,
            statusInputs: {
              pinSystemMessages: known.pinSystemMessages,
              inputs: statusInputsFromRows(outcome.readAfter),
            },
          }
        : { session, appended, turnEnds };
    }
    if (outcome.kind === 'needs-batch') {
      // Not a change of model: the same count, as messages the append can decide on.
      batch = await source.messages(modelId);
      attempt -= 1;
      continue;
    }
    if (attempt >= MODEL_CHANGES_TOLERATED) {
      throw new Conflict('model_kept_changing', "the session's model kept changing during the append; retry");
    }
    modelId = outcome.session.modelId;
    contextWindow = outcome.session.contextWindow;
    ({ batch, turnEnds, usagePeaks } = await source.prepare(modelId));
  }
}
