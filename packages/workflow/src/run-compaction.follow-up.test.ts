/**
 * A compaction outrun by appends (messages that arrived while it ran leave the session over its
 * trigger) is followed by another at once; one that was itself ineffective, or that nothing
 * outran, is not (the next append's trigger decides, with its loop guards).
 */
import { describe, expect, it } from 'vitest';
import type { PolicyInput } from '@compactor/core';
import { findActiveCompaction, type SessionRow } from '@compactor/db';
import { generateCodingSession } from '@compactor/testing/fixtures';
import { useWorkflow } from './test-support/workflow';
import { requestCompaction } from './request-compaction';
import { runCompaction } from './run-compaction';
import type { WorkflowResources } from './resources';

const w = useWorkflow();

/** A fixed threshold (the topic reference's trigger) well inside the 32k test window. */
const trigger = (tokens: number): PolicyInput => ({ trigger: { kind: 'tokens', tokens } });

/** About `tokens` tokens of user text. */
const bigMessage = (id: string, tokens: number) => ({
  id,
  role: 'user' as const,
  parts: [{ type: 'text' as const, text: 'alpha beta gamma delta '.repeat(Math.ceil(tokens / 4)) }],
});

/** Runs a manual compaction of `session`; `whileRunning` appends once the LLM was called. */
async function compactWhile(session: SessionRow, whileRunning?: () => Promise<void>) {
  const { compaction } = await requestCompaction(w.resources.db, session, {
    reason: 'manual',
    keepRecentTokens: 500,
  });
  const info: Array<Record<string, unknown>> = [];
  const resources: WorkflowResources = {
    ...w.resources,
    log: { info: (fields) => info.push(fields), warn: () => undefined },
    requestCompaction: (s, request) => requestCompaction(w.resources.db, s, request),
  };
  w.stub.setFaults({ latencyMs: 300 });
  try {
    const seen = w.stub.requests.length;
    const running = runCompaction(resources, compaction.id, { lastAttempt: true });
    await w.stub.waitForRequests(seen + 1);
    await whileRunning?.();
    const result = await running;
    if (result.status !== 'completed') throw new Error(`the compaction ended ${result.status}`);
    return { completed: result.compaction, followUp: result.followUp ?? null, info };
  } finally {
    w.stub.setFaults({});
  }
}

describe('a compaction outrun by appends', () => {
  it('is followed by another at once, requested the way the API requests one', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 3 }), { policy: trigger(5_000) });
    const { completed, followUp, info } = await compactWhile(session, () =>
      w.append(session, [bigMessage('late', 6_000)]),
    );

    expect(completed.tokensAfter).toBeGreaterThan(5_000);
    expect(followUp).toMatchObject({ reason: 'auto', status: 'pending' });
    expect(await findActiveCompaction(w.resources.db, session.pk)).toMatchObject({ id: followUp!.id });
    const requested = info.find((fields) => fields.followUpId === followUp!.id);
    // Its own result was below the threshold: the appended message made the difference.
    expect(requested).toMatchObject({ tokensAfter: completed.tokensAfter });
    expect(completed.tokensAfter! - (requested!.appendedTokens as number)).toBeLessThan(5_000);
  });

  it('is not followed when nothing arrived while it ran, even if it left the session over its trigger', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 3 }), { policy: trigger(100) });
    const { completed, followUp } = await compactWhile(session);
    expect(completed.tokensAfter).toBeGreaterThan(100);
    expect(followUp).toBeNull();
    expect(await findActiveCompaction(w.resources.db, session.pk)).toBeNull();
  });

  it('is not followed when it was itself ineffective and little arrived (the loop guard)', async () => {
    const session = await w.seedSession(generateCodingSession({ turns: 3 }), { policy: trigger(100) });
    const { followUp } = await compactWhile(session, () =>
      w.append(session, [{ id: 'ok', role: 'user', parts: [{ type: 'text', text: 'ok' }] }]),
    );
    expect(followUp).toBeNull();
    expect(await findActiveCompaction(w.resources.db, session.pk)).toBeNull();
  });
});
