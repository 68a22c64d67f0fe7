/**
 * Part 1a: CPU per compaction (the process running it, and its Postgres backends), round trips
 * and statements, each measurement in a child process of its own (compaction-cpu.child.ts).
 * With `BENCH_BASELINE_REF` the same measurement runs that commit's packages too, alternating
 * with this checkout's round by round, so both are judged on the same machine at the same load.
 */
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadNote } from '../harness';
import { baselineTree } from './baseline-tree';
import { CPU_WINDOW, type CompactionCpu } from './compaction-cpu';
import { row } from './sessions';
import { printStatementTimes } from './statements';

const root = join(dirname(fileURLToPath(import.meta.url)), '../..');

interface Build {
  label: string;
  dir: string;
}

async function measureIn(build: Build, env: Record<string, string>): Promise<CompactionCpu> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(build.dir, 'bench/workflow/compaction-cpu.child.ts')],
    {
      cwd: build.dir,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  const line = out.split('\n').find((l) => l.startsWith('compaction-cpu '));
  if (code !== 0 || !line)
    throw new Error(`${build.label}: the measurement exited ${code}\n${out.slice(-2000)}`);
  const parsed = JSON.parse(line.slice('compaction-cpu '.length)) as CompactionCpu & {
    statements: Array<[string, { count: number; ms: number; bytes: number }]>;
  };
  return { ...parsed, statements: new Map(parsed.statements) };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function compactionCpuPart(options: {
  databaseUrl: string;
  redisUrl: string;
  stubUrl: string;
  /** Gives a queue prefix for one measurement, deleted with the run's others at the end. */
  prefix: (name: string) => string;
}): Promise<void> {
  const builds: Build[] = [{ label: 'this checkout', dir: root }];
  const ref = process.env.BENCH_BASELINE_REF;
  if (ref) {
    const tree = baselineTree(ref);
    builds.unshift({ label: `baseline ${tree.commit.slice(0, 8)}`, dir: tree.dir });
  }
  const rounds = Number(process.env.BENCH_CPU_ROUNDS ?? (ref ? 3 : 1));
  const results = new Map<string, CompactionCpu[]>(builds.map((b) => [b.label, []]));
  console.log(`\n1a. CPU per compaction, ${CPU_WINDOW}-message window, zero-latency stub (${loadNote()})`);
  for (let round = 0; round < rounds; round++) {
    // Alternated, and in the other order every second round: neither build always runs first.
    const order = round % 2 === 0 ? builds : [...builds].reverse();
    for (const build of order) {
      const measured = await measureIn(build, {
        DATABASE_URL: options.databaseUrl,
        REDIS_URL: options.redisUrl,
        OPENAI_BASE_URL: options.stubUrl,
        QUEUE_PREFIX: options.prefix(`cpu-${round}-${build.label.replace(/\W+/g, '-')}`),
      });
      results.get(build.label)!.push(measured);
      row(
        `  round ${round + 1}, ${build.label}: worker + Postgres CPU`,
        `${(measured.workerMs + measured.postgresMs).toFixed(1)} ms = ${measured.workerMs.toFixed(1)} + ${measured.postgresMs.toFixed(1)} ms; ${measured.roundTrips.toFixed(1)} round trips (${loadNote()})`,
      );
    }
  }
  for (const build of builds) {
    const runs = results.get(build.label)!;
    const at = (pick: (r: CompactionCpu) => number) => median(runs.map(pick)).toFixed(2);
    const sample = runs[0]!;
    console.log(
      `\n  ${build.label}: ${sample.compactions} compactions a round, ${sample.tokensBefore} → ${sample.tokensAfter} tokens; medians of ${runs.length} round(s)`,
    );
    row('  worker + Postgres CPU per compaction', `${at((r) => r.workerMs + r.postgresMs)} ms`);
    row(
      "  worker CPU (this measurement's process)",
      `${at((r) => r.workerMs)} ms (user ${at((r) => r.workerUserMs)}, system ${at((r) => r.workerSystemMs)})`,
    );
    row('    of which in the LLM client (prompt, exact count, HTTP)', `${at((r) => r.llmClientMs)} ms`);
    row('  Postgres CPU (its own backends, /proc)', `${at((r) => r.postgresMs)} ms`);
    row(
      '  round trips to Postgres (BEGIN, COMMIT too)',
      at((r) => r.roundTrips),
    );
    row('  wall time per compaction, sequential', `${at((r) => r.wallMs)} ms`);
    printStatementTimes(runs.at(-1)!.statements, sample.compactions);
  }
  if (builds.length === 2) {
    const total = (label: string) => median(results.get(label)!.map((r) => r.workerMs + r.postgresMs));
    row(
      '\n  this checkout / baseline, worker + Postgres CPU',
      `${(total(builds[1]!.label) / total(builds[0]!.label)).toFixed(2)}×`,
    );
  }
}
