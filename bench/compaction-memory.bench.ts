/**
 * One compaction's cost against the size of the session it compacts: a never-compacted session
 * of each size (BENCH_COMPACTION_SIZES, default 10k, 45k and 100k messages) is compacted once,
 * each in its own child process, so its peak RSS (`process.resourceUsage().maxRSS`) is that
 * size's alone. The child reports the compaction's wall time, the longest event-loop stall
 * (`monitorEventLoopDelay`) and, as a check, the longest gap between ticks of a 10 ms interval.
 * Sessions are seeded set-based (bench/scale/seed.ts: user requests, assistant turns with a
 * ~2 KB tool output each) plus one 64 KB output every 997 messages; the summarizer is the LLM
 * stub, a process of its own. Goals: peak RSS at the largest size within 1.25× of 10k's, every
 * stall under 100 ms, wall time linear (the largest over 10k at most its size ratio × 1.1).
 * The children run with the worker deployment's V8 heap limit (BENCH_CHILD_HEAP=default: V8's).
 * `npm run bench -- compaction-memory` (BENCH_DATABASE_URL moves the database).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import { createDatabase, findCompaction, insertCompaction, newId } from '@compactor/db';
import { createLlm } from '@compactor/llm';
import { getTokenizer } from '@compactor/tokenizer';
import { runCompaction, silentLog } from '@compactor/workflow';
import { deployedNodeOptions, dropDatabase, freshDatabase, loadNote, startStubProcess } from './processes';
import { createOutputCorpus, seedSessions, settle } from './scale/seed';
import { measureChild, type ChildFigures } from './compaction-memory/child';

const URL =
  process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_compaction_memory';
const SIZES = (process.env.BENCH_COMPACTION_SIZES ?? '10000,45000,100000').split(',').map(Number);
const OUTPUT_CHARS = 2_048;
/** Every this-many-th message's tool output is made large. */
const LARGE_EVERY = 997;
const LARGE_CHARS = 65_536;
/**
 * The child runs with the worker deployment's heap limit (infra/k8s/worker.yaml's NODE_OPTIONS),
 * as a worker does; BENCH_CHILD_HEAP=default leaves V8's own, sized from the machine's memory.
 */
const CHILD_NODE_FLAGS =
  process.env.BENCH_CHILD_HEAP === 'default' ? [] : deployedNodeOptions('worker').split(' ');

if (process.argv[2] === 'child') {
  // One compaction in this process: figures as one JSON line on stdout.
  const figures = await measureChild(async () => {
    const database = createDatabase(process.env.BENCH_CHILD_DATABASE_URL!, {
      statementTimeoutMs: 0,
      applicationName: 'compactor-bench-compaction-memory',
    });
    // A worker has its tokenizers loaded long before a big compaction: loading the ranks (once a
    // process) is not what is measured.
    for (const encoding of ['o200k_base', 'cl100k_base'] as const)
      await getTokenizer(encoding).count('warm up');
    const resources = {
      db: database.db,
      llm: createLlm({ apiKey: 'stub', baseURL: process.env.BENCH_CHILD_STUB_URL!, timeoutMs: 60_000 }),
      clock: () => new Date(),
      log: silentLog,
    };
    return {
      run: () => runCompaction(resources, process.env.BENCH_CHILD_COMPACTION_ID!, { lastAttempt: true }),
      close: () => database.pool.end(),
    };
  });
  console.log(JSON.stringify(figures));
  process.exit(0);
}

const row = (label: string, value: string) => console.log(`${label.padEnd(56)} ${value}`);

/** A never-compacted session of `messages`, seeded set-based; a few outputs made large. */
async function seedSession(pool: pg.Pool, messages: number): Promise<number> {
  const [pk] = await seedSessions(pool, {
    tenantId: 'bench',
    idPrefix: `memory-${messages}-`,
    sessions: 1,
    messages,
    outputChars: OUTPUT_CHARS,
    keep: null,
  });
  await pool.query(
    `update parts set tool_output = repeat(left(tool_output, 1024), $2 / 1024), output_tokens = round($2 / 3.7)::int,
            tokens = round($2 / 3.7)::int + 50
     where session_pk = $1 and type = 'tool' and seq % $3 = 0`,
    [pk, LARGE_CHARS, LARGE_EVERY * 2],
  );
  return pk!;
}

/** Runs one compaction of `sessionPk` in a child process; its figures. */
async function compactInChild(stubUrl: string, compactionId: string): Promise<ChildFigures> {
  // BENCH_CHILD_PROFILE_DIR: each child writes a V8 CPU profile there.
  const dir = process.env.BENCH_CHILD_PROFILE_DIR;
  const profile = dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
  const child = spawn(
    process.execPath,
    [...profile, ...CHILD_NODE_FLAGS, '--import', 'tsx', fileURLToPath(import.meta.url), 'child'],
    {
      env: {
        ...process.env,
        BENCH_CHILD_DATABASE_URL: URL,
        BENCH_CHILD_STUB_URL: stubUrl,
        BENCH_CHILD_COMPACTION_ID: compactionId,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  // A failed spawn or a broken pipe ends the child; its exit below says so.
  child.on('error', (error) => (out += `\n${error.message}`));
  child.stdout.on('error', () => undefined);
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  const line = out.trim().split('\n').at(-1) ?? '';
  if (code !== 0 || !line.startsWith('{')) throw new Error(`child exited ${code}: ${out.slice(-2000)}`);
  return JSON.parse(line) as ChildFigures;
}

console.log(`child node flags: ${CHILD_NODE_FLAGS.join(' ') || "none (V8's default heap limit)"}`);
await freshDatabase(URL);
const database = createDatabase(URL, {
  statementTimeoutMs: 0,
  applicationName: 'compactor-bench-compaction-memory',
});
const stub = await startStubProcess();
const results = new Map<number, ChildFigures>();
try {
  await createOutputCorpus(database.pool);
  for (const size of SIZES) {
    const seeded = performance.now();
    const pk = await seedSession(database.pool, size);
    await settle(database.pool);
    const compaction = await insertCompaction(database.db, {
      id: newId('cmp'),
      sessionPk: pk,
      reason: 'manual',
      strategy: 'summarize',
    });
    const seedSeconds = (performance.now() - seeded) / 1000;
    const figures = await compactInChild(stub.url, compaction!.id);
    results.set(size, figures);
    const done = await findCompaction(database.db, compaction!.id);
    const detail = (done?.details ?? {}) as { calls?: number; chunks?: number };
    console.log(`\n${size.toLocaleString('en-US')} messages (seeded in ${seedSeconds.toFixed(1)} s)`);
    row(
      '  outcome',
      `${figures.status}, ${detail.calls ?? '?'} summarizer calls, ${done?.usageInput ?? 0} prompt tokens sent`,
    );
    row('  wall time', `${(figures.wallMs / 1000).toFixed(2)} s`);
    row('  peak RSS (maxRSS)', `${figures.maxRssMiB.toFixed(0)} MiB`);
    row(
      '  peak V8 heap used / heap total / external',
      `${figures.peakHeapUsedMiB.toFixed(0)} / ${figures.peakHeapTotalMiB.toFixed(0)} / ${figures.peakExternalMiB.toFixed(0)} MiB`,
    );
    row('  longest event-loop stall (monitorEventLoopDelay max)', `${figures.maxDelayMs.toFixed(1)} ms`);
    row('  longest gap of a 10 ms interval', `${figures.maxGapMs.toFixed(1)} ms`);
    row('  machine', loadNote());
  }
  const sizes = [...results.keys()];
  const first = sizes[0]!;
  const last = sizes.at(-1)!;
  if (sizes.length > 1) {
    const a = results.get(first)!;
    const b = results.get(last)!;
    console.log(`\n${last.toLocaleString('en-US')} vs ${first.toLocaleString('en-US')} messages`);
    const rss = b.maxRssMiB / a.maxRssMiB;
    const wall = b.wallMs / a.wallMs;
    const stall = Math.max(...[...results.values()].map((f) => f.maxDelayMs));
    row('  peak RSS ratio (goal ≤ 1.25×)', `${rss.toFixed(2)}× ${rss <= 1.25 ? 'ok' : 'MISSED'}`);
    const linear = (last / first) * 1.1;
    row(
      `  wall time ratio (goal ≤ ${linear.toFixed(1)}×)`,
      `${wall.toFixed(2)}× ${wall <= linear ? 'ok' : 'MISSED'}`,
    );
    row(
      '  longest stall, any size (goal < 100 ms)',
      `${stall.toFixed(1)} ms ${stall < 100 ? 'ok' : 'MISSED'}`,
    );
  }
} finally {
  await stub.stop();
  await database.pool.end();
  await dropDatabase(URL);
}
