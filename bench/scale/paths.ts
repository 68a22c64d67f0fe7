/**
 * The hot paths the scale benchmark times, each beside the baseline a simpler service would use
 * (load the whole history, then assemble or estimate it in JS with core's reference functions),
 * and the checks that both give the same answer before anything is timed.
 */
import { assembleContext, estimateContextTokens, usageCalibrationCap } from '@compactor/core';
import {
  appendToSession,
  findSessionByPk,
  estimateFromStats,
  sessionStatusInputs,
  loadContextRows,
  patchMessage,
  type Db,
  type NewMessage,
} from '@compactor/db';
import type pg from 'pg';
import { loadEverything } from '../baseline';

/**
 * The most a usage report adds over the stored count for gpt-4o (a quarter of its usable
 * 111,616): the status and core's reference are compared with the same cap.
 */
const ESTIMATE = { calibrationCap: usageCalibrationCap(111_616) };

/** Context read as the API serves it: the SQL filter, then core's rendering. */
export async function readContext(db: Db, sessionPk: number) {
  const rows = await loadContextRows(db, sessionPk);
  return assembleContext(rows.messages, rows.compaction ? [rows.compaction] : []);
}

/**
 * Session status as the API serves it: SQL sums of stored counts and the session's compactions in
 * one statement, core's formula on top.
 */
export async function readStatus(db: Db, sessionPk: number): Promise<number> {
  return estimateFromStats((await sessionStatusInputs(db, sessionPk)).stats, ESTIMATE);
}

export async function baselineContext(db: Db, sessionPk: number) {
  const { all, compactions } = await loadEverything(db, sessionPk);
  return assembleContext(all, compactions);
}

export async function baselineStatus(db: Db, sessionPk: number): Promise<number> {
  const { all, compactions } = await loadEverything(db, sessionPk);
  return estimateContextTokens(assembleContext(all, compactions).messages, ESTIMATE).tokens;
}

/** Throws unless the SQL-filtered context view is exactly core's view of the whole history. */
export async function verifyContext(db: Db, sessionPk: number): Promise<number> {
  const ours = await readContext(db, sessionPk);
  const reference = await baselineContext(db, sessionPk);
  if (JSON.stringify(ours) !== JSON.stringify(reference)) {
    throw new Error(
      `context view differs from the reference (${ours.messages.length} vs ${reference.messages.length} messages)`,
    );
  }
  return ours.messages.length;
}

/** Throws unless the status estimate from SQL sums equals core's estimate of the stored view. */
export async function verifyStatus(db: Db, sessionPk: number): Promise<number> {
  const rows = await loadContextRows(db, sessionPk);
  // Core's estimate reads the stored (unrendered) view, summaries first.
  const stored = [...rows.messages.filter((m) => m.summary), ...rows.messages.filter((m) => !m.summary)];
  const expected = estimateContextTokens(stored, ESTIMATE).tokens;
  const ours = await readStatus(db, sessionPk);
  if (ours !== expected) throw new Error(`status estimate ${ours} differs from core's ${expected}`);
  return ours;
}

let appended = 0;

/** A user turn of one text part, with an id never used before in this run. */
export function userMessage(): NewMessage {
  const n = ++appended;
  return {
    id: `bench-user-${n}`,
    role: 'user',
    parts: [{ type: 'text', text: `now run the tests for module ${n}`, tokens: 9 }],
    finish: null,
    error: null,
    usage: null,
    createdAt: new Date(),
    metadata: {},
    contentHash: `bench-user-${n}`,
  };
}

/** A finished assistant step with a tool call: the append looks up unfinished calls for it. */
export function assistantMessage(): NewMessage {
  const n = ++appended;
  return {
    id: `bench-assistant-${n}`,
    role: 'assistant',
    parts: [
      { type: 'text', text: `Running the tests of module ${n}`, tokens: 7 },
      {
        type: 'tool',
        callId: `bench_call_${n}`,
        tool: 'bash',
        status: 'completed',
        input: { command: `npm test -- module${n}` },
        output: `PASS src/module${n}.test.ts\n`.repeat(20),
        error: null,
        compactedAt: null,
        tokens: 180,
        outputTokens: 160,
      },
    ],
    finish: 'tool-calls',
    error: null,
    usage: { input: 30_000 + n, output: 120, reasoning: 0, cacheRead: 25_000, cacheWrite: 0 },
    createdAt: new Date(),
    metadata: {},
    contentHash: `bench-assistant-${n}`,
  };
}

/**
 * The first half of a streamed turn: an assistant step whose tool call is still running (no
 * output, no finish), as a client appends it before the tool has answered. {@link finishStreamed}
 * is the PATCH that completes it.
 */
export function streamedAssistantMessage(): NewMessage {
  const n = ++appended;
  return {
    ...assistantMessage(),
    id: `bench-streamed-${n}`,
    parts: [
      {
        type: 'tool',
        callId: `bench_streamed_call_${n}`,
        tool: 'bash',
        status: 'running',
        input: { command: `npm test -- module${n}` },
        output: null,
        error: null,
        compactedAt: null,
        tokens: 12,
        outputTokens: 0,
      },
    ],
    finish: null,
    usage: null,
    contentHash: `bench-streamed-${n}`,
  };
}

/** The PATCH that finishes a {@link streamedAssistantMessage}: its tool result, finish and usage. */
export async function finishStreamed(db: Db, sessionPk: number, message: NewMessage): Promise<void> {
  const [call] = message.parts;
  if (call?.type !== 'tool') throw new Error(`${message.id} has no tool call to finish`);
  await patchMessage(db, sessionPk, message.id, {
    finish: 'tool-calls',
    usage: { input: 31_000, output: 140, reasoning: 0, cacheRead: 25_000, cacheWrite: 0 },
    parts: [
      {
        ...call,
        status: 'completed',
        output: `PASS src/${message.id}.test.ts\n`.repeat(20),
        tokens: 180,
        outputTokens: 160,
      },
    ],
  });
}

const appendTargets = new Map<number, { tenantId: string; id: string; modelId: string }>();

/** An append as the API makes it: the session found by its client ids in the append's statement. */
export async function appendOne(db: Db, sessionPk: number, message: NewMessage): Promise<void> {
  let target = appendTargets.get(sessionPk);
  if (!target) {
    const session = await findSessionByPk(db, sessionPk);
    if (!session) throw new Error(`no session ${sessionPk}`);
    target = { tenantId: session.tenantId, id: session.id, modelId: session.modelId };
    appendTargets.set(sessionPk, target);
  }
  const outcome = await appendToSession(db, target, [message]);
  if (outcome.kind !== 'appended') throw new Error(`append to session ${sessionPk}: ${outcome.kind}`);
}

/** Removes what the append runs added, so later measurements see the seeded session unchanged. */
export async function removeAppended(pool: pg.Pool, sessionPk: number, lastSeq: number): Promise<void> {
  await pool.query('delete from messages where session_pk = $1 and seq > $2', [sessionPk, lastSeq]);
  await pool.query('update sessions set last_seq = $2 where pk = $1', [sessionPk, lastSeq]);
}
