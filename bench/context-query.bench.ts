/**
 * The context view and the session status, in SQL, against the baseline a simpler service would
 * use: load the whole history and assemble / estimate it in JS (core's reference functions).
 * Same process, same database, same session. `npm run bench -- context`
 */
import { assembleContext, estimateContextTokens, usageCalibrationCap, type Part } from '@compactor/core';
import {
  completeCompaction,
  contextTokenStats,
  createDatabase,
  deleteSession,
  ensureDatabase,
  estimateFromStats,
  insertCompaction,
  insertSession,
  loadContextRows,
  migrateDatabase,
  newId,
  type NewMessage,
} from '@compactor/db';
import { loadEverything } from './baseline';
import { seedMessages } from './seed-messages';

const URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench';
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 20_000);
const RUNS = 15;

function message(i: number): NewMessage {
  const parts: Part[] =
    i % 2 === 0
      ? [{ type: 'text', text: `user request ${i} `.repeat(20), tokens: 80 }]
      : [
          { type: 'text', text: `working on ${i}`, tokens: 5 },
          {
            type: 'tool',
            callId: `c${i}`,
            tool: 'read',
            status: 'completed',
            input: { path: `src/f${i}.ts` },
            output: `line of source ${i}\n`.repeat(100),
            error: null,
            compactedAt: null,
            tokens: 610,
            outputTokens: 600,
          },
        ];
  return {
    id: `m${i}`,
    role: i % 2 === 0 ? 'user' : 'assistant',
    parts,
    finish: i % 2 === 0 ? null : 'stop',
    error: null,
    usage: i % 2 === 0 ? null : { input: 1000 + i, output: 50, reasoning: 0, cacheRead: 0, cacheWrite: 0 },
    createdAt: new Date(1_700_000_000_000 + i * 1000),
    metadata: {},
    contentHash: `h${i}`,
  };
}

async function time(fn: () => Promise<unknown>): Promise<{ median: number; p95: number }> {
  const samples: number[] = [];
  for (let run = 0; run < RUNS; run++) {
    const start = performance.now();
    await fn();
    samples.push(performance.now() - start);
  }
  samples.sort((a, b) => a - b);
  return { median: samples[Math.floor(RUNS / 2)]!, p95: samples[Math.floor(RUNS * 0.95)]! };
}

await ensureDatabase(URL);
await migrateDatabase(URL);
const database = createDatabase(URL, { statementTimeoutMs: 0, applicationName: 'compactor-bench' });
const { db } = database;
try {
  const session = await insertSession(db, {
    tenantId: 'bench',
    id: newId('ses'),
    modelId: 'gpt-4o',
    provider: 'openai',
    contextWindow: 128_000,
    maxOutputTokens: 16_384,
    createHash: 'bench',
  });
  const seedStart = performance.now();
  for (let i = 0; i < MESSAGES; i += 500) {
    await seedMessages(
      db,
      session!,
      Array.from({ length: Math.min(500, MESSAGES - i) }, (_, k) => message(i + k)),
    );
  }
  // A completed compaction keeps the last 10 %: the usual shape of a long session.
  const compaction = await insertCompaction(db, {
    id: newId('cmp'),
    sessionPk: session!.pk,
    reason: 'auto',
    strategy: 'summarize',
  });
  const summary = { ...message(0), id: 'summary', role: 'assistant' as const, contentHash: 's' };
  await completeCompaction(db, {
    compactionId: compaction!.id,
    sessionPk: session!.pk,
    summaryMessages: [summary],
    boundarySeq: Math.floor(MESSAGES * 0.9) + 1,
    tokensBefore: 0,
    messagesBefore: 0,
    finishedAt: new Date(),
  });
  console.log(
    `seeded ${MESSAGES} messages (${Math.round(MESSAGES * 1.5)} parts) in ${Math.round(performance.now() - seedStart)} ms`,
  );

  // Same answers first, then timings.
  const rows = await loadContextRows(db, session!.pk);
  const { all, compactions } = await loadEverything(db, session!.pk);
  const reference = assembleContext(all, compactions);
  const ours = assembleContext(rows.messages, rows.compaction ? [rows.compaction] : []);
  if (JSON.stringify(ours) !== JSON.stringify(reference))
    throw new Error('context view differs from the reference');
  const stored = [...rows.messages.filter((m) => m.summary), ...rows.messages.filter((m) => !m.summary)];
  // gpt-4o's cap on what a report adds over the stored count: a quarter of its usable 111,616.
  const estimate = { calibrationCap: usageCalibrationCap(111_616) };
  if (
    estimateFromStats(await contextTokenStats(db, session!.pk), estimate) !==
    estimateContextTokens(stored, estimate).tokens
  ) {
    throw new Error('status estimate differs from the reference');
  }

  const report = (
    label: string,
    ours: { median: number; p95: number },
    baseline: { median: number; p95: number },
  ) =>
    console.log(
      `${label.padEnd(34)} ours ${ours.median.toFixed(1).padStart(7)} ms (p95 ${ours.p95.toFixed(1)})   baseline ${baseline.median.toFixed(1).padStart(8)} ms (p95 ${baseline.p95.toFixed(1)})   ${(baseline.median / ours.median).toFixed(1)}× faster`,
    );
  report(
    'context view (SQL filter + render)',
    await time(async () => {
      const r = await loadContextRows(db, session!.pk);
      assembleContext(r.messages, r.compaction ? [r.compaction] : []);
    }),
    await time(async () => {
      const e = await loadEverything(db, session!.pk);
      assembleContext(e.all, e.compactions);
    }),
  );
  report(
    'status tokens (SQL sums)',
    await time(() => contextTokenStats(db, session!.pk)),
    await time(async () => {
      const e = await loadEverything(db, session!.pk);
      estimateContextTokens(assembleContext(e.all, e.compactions).messages, estimate);
    }),
  );
  await deleteSession(db, session!.pk);
} finally {
  await database.close();
}
