import { expect } from 'vitest';
import { generateCodingSession } from '@compactor/testing/fixtures';
import type { TestApi } from './api';
import type { InProcessWorker } from './in-process-worker';

/** Pruning that clears outputs of a short session: all but the last user turn, past 100 tokens. */
const PRUNING_POLICY = { pruning: { protectTokens: 100, minimumTokens: 1, protectUserTurns: 1 } };

/** A session the MCP tools can act on, and what its compaction cleared. */
export interface CompactedSession {
  id: string;
  /** The completed compaction (the latest of the session). */
  compactionId: string;
  /** A tool call whose output that compaction cleared, and the output as the tool returned it. */
  clearedCallId: string;
  clearedOutput: string;
}

/**
 * Tenant A's session `id`: a generated coding session of four turns, compacted once (run to
 * completion on the stub LLM), which cleared at least one tool output.
 */
export async function compactedSession(
  api: TestApi,
  worker: InProcessWorker,
  id: string,
): Promise<CompactedSession> {
  const created = await api.request({
    method: 'POST',
    url: '/v1/sessions',
    payload: { id, model: { id: 'gpt-4o' }, policy: PRUNING_POLICY },
  });
  expect(created.statusCode, created.body).toBe(201);
  const messages = generateCodingSession({ turns: 4, seed: 7 }).map((m) => ({ ...m, id: `${id}-${m.id}` }));
  const appended = await api.request({
    method: 'POST',
    url: `/v1/sessions/${id}/messages`,
    payload: { messages },
  });
  expect(appended.statusCode, appended.body).toBe(201);

  const requested = await api.request({
    method: 'POST',
    url: `/v1/sessions/${id}/compactions`,
    payload: { keepRecentTokens: 500 },
  });
  expect(requested.statusCode, requested.body).toBe(202);
  const compactionId: string = requested.json().id;
  await worker.run(compactionId);

  const history = await api.request({ method: 'GET', url: `/v1/sessions/${id}/messages?limit=1000` });
  const cleared = (history.json().messages as Array<{ parts: ToolPart[] }>)
    .flatMap((m) => m.parts)
    .find((p) => p.type === 'tool' && p.compactedAt !== null && typeof p.output === 'string');
  if (!cleared) throw new Error(`the compaction of ${id} cleared no tool output`);
  return { id, compactionId, clearedCallId: cleared.callId, clearedOutput: cleared.output };
}

interface ToolPart {
  type: string;
  callId: string;
  output: string;
  compactedAt: string | null;
}
