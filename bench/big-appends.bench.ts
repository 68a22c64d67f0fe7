/**
 * Appends that could stall other tenants: (1) tenant A posts 31 MiB appends (one after another,
 * then four at once) while tenant B reads its own session's context at a steady rate; (2) 50
 * concurrent 40 KB appends to one session of tenant A while tenant B appends to its own sessions.
 * Each is measured against the same loop on an idle API in the same run; the API runs as its own
 * process (`npm run api`), sampled for its resident memory. (1) runs against two API processes
 * in the same run: large writes one at a time (the default, `LARGE_WRITES_*`) and unlimited
 * (`LARGE_WRITES_IN_FLIGHT=0`; BENCH_BIG_COMPARE=0 skips it). A's large appends go from a
 * process of their own (bench/big-appends/uploader.ts), as another tenant's client would; one
 * answered 429 is sent again after its Retry-After, as a client would. B's rate is one read every 20 ms, or
 * slower on a loaded machine (3× a read's own time, measured first; BENCH_READ_EVERY_MS sets it),
 * so that B's own reads do not saturate the API. `npm run bench -- big-appends`.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import {
  deployedNodeOptions,
  dropDatabase,
  freshDatabase,
  loadNote,
  memoryOf,
  startApiProcess,
  type Child,
} from './processes';
import { apiHeaders, apiLoopDelay as loopDelay, spread, type Spread } from './harness';
import { logText, post } from './big-appends/bodies';
import { runUploaderChild, UPLOADER_CHILD, uploaderProcess } from './big-appends/uploader';

const URL =
  process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_big_appends';
const IDLE_READS = 200;
const SMALL_APPENDS_IDLE = 100;
const CONCURRENT_APPENDS = 50;
const CONCURRENT_APPEND_BYTES = 40 * 1024;
const CONCURRENT_WAVES = 3;
const OTHER_SESSIONS = 4;

/**
 * Requests at a steady rate, each timed from when it was due: `send` every `everyMs` while
 * `running()` (at least `min` of them), not waiting for the previous one, as independent
 * clients would. A stall of the API then delays every request due during it, which a loop of
 * one request after another would count once.
 */
async function steadyLoad(
  send: (i: number) => Promise<void>,
  everyMs: number,
  running: () => boolean,
  min = 0,
): Promise<number[]> {
  const times: number[] = [];
  const inFlight: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; running() || i < min; i++) {
    const due = start + i * everyMs;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    inFlight.push(send(i).then(() => void times.push(performance.now() - due)));
  }
  await Promise.all(inFlight);
  return times;
}

/** Statuses of tenant B's requests that failed (a 503 when the API's pool wait timed out; 0: no answer). */
const failures: number[] = [];

/** Tenant B's context read (a failure recorded, not thrown). */
async function readContext(api: string): Promise<void> {
  try {
    const response = await fetch(`${api}/v1/sessions/quiet/context`, { headers: apiHeaders('key-b') });
    await response.arrayBuffer();
    if (response.status !== 200) failures.push(response.status);
  } catch {
    failures.push(0);
  }
}

/** Tenant B's context reads, one every `everyMs`. */
function readLoop(api: string, everyMs: number, running: () => boolean, min = 0): Promise<number[]> {
  return steadyLoad(() => readContext(api), everyMs, running, min);
}

/** Tenant B's small appends, one every `everyMs`, over its own sessions in turn. */
function smallAppendLoop(api: string, everyMs: number, running: () => boolean, min = 0): Promise<number[]> {
  return steadyLoad(
    async (i) => {
      const body = JSON.stringify({
        messages: [{ role: 'user', parts: [{ type: 'text', text: `${randomUUID()} run the tests again` }] }],
      });
      const status = await post(api, 'key-b', `other-${i % OTHER_SESSIONS}`, body);
      if (status !== 201) failures.push(status);
    },
    everyMs,
    running,
    min,
  );
}

/** The API's resident memory, sampled every 20 ms while `running()`: the peak in MiB. */
async function peakRss(pid: number, running: () => boolean): Promise<number> {
  let peak = 0;
  while (running()) {
    peak = Math.max(peak, memoryOf(pid).rssMiB);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return peak;
}

const fmt = (r: Spread) =>
  `n ${String(r.n).padStart(4)}   p50 ${r.p50.toFixed(1).padStart(7)} ms   p99 ${r.p99.toFixed(1).padStart(7)} ms   max ${r.max.toFixed(1).padStart(7)} ms`;
const tally = (statuses: number[]) => {
  const counts = new Map<number, number>();
  for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1);
  return [...counts].map(([status, n]) => `${n} × ${status}`).join(', ');
};

/**
 * CPU seconds the API's main thread (its event loop: the thread whose id is the process's) has
 * used so far; worker threads and Postgres are not in it. Unlike latencies it does not grow with
 * what else the machine runs.
 */
function eventLoopCpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

interface Phase<T> {
  times: number[];
  result: T;
  seconds: number;
  peakMiB: number;
  loopCpu: number;
  load: string;
  failed: number;
  delay: { max: number; p99: number };
  /** This process's own event-loop delay (it times B's requests and sends A's): what of B's time is the client's. */
  clientDelay: { max: number; p99: number };
}

async function during<T>(
  api: Child & { url: string },
  loop: (running: () => boolean) => Promise<number[]>,
  load: () => Promise<T>,
): Promise<Phase<T>> {
  const pid = api.process.pid!;
  let running = true;
  const started = performance.now();
  await loopDelay(api.url);
  const cpuBefore = eventLoopCpuSeconds(pid);
  const failedBefore = failures.length;
  const client = monitorEventLoopDelay({ resolution: 10 });
  client.enable();
  const sampling = peakRss(pid, () => running);
  const measuring = loop(() => running);
  const result = await load().finally(() => (running = false));
  const seconds = (performance.now() - started) / 1000;
  const loopCpu = eventLoopCpuSeconds(pid) - cpuBefore;
  const times = await measuring;
  client.disable();
  const clientDelay = { max: client.max / 1e6, p99: client.percentile(99) / 1e6 };
  const delay = await loopDelay(api.url);
  const failed = failures.length - failedBefore;
  return {
    times,
    result,
    seconds,
    peakMiB: await sampling,
    loopCpu,
    load: loadNote(),
    failed,
    delay,
    clientDelay,
  };
}

const largeTally = (results: Array<{ status: number; tries: number }>) =>
  `${tally(results.map((r) => r.status))} after ${results.reduce((sum, r) => sum + r.tries, 0)} tries`;
const phaseLine = (phase: Phase<unknown>, what: string) =>
  `    ${what} in ${phase.seconds.toFixed(1)} s; API peak RSS ${phase.peakMiB.toFixed(0)} MiB; ` +
  `event loop CPU ${phase.loopCpu.toFixed(1)} s; B's failed requests ${phase.failed}; ` +
  `API event-loop delay p99 ${phase.delay.p99.toFixed(0)} ms, max ${phase.delay.max.toFixed(0)} ms; ` +
  `the bench's own p99 ${phase.clientDelay.p99.toFixed(0)} ms, max ${phase.clientDelay.max.toFixed(0)} ms; ${phase.load}`;

async function benchmark(): Promise<void> {
  let stopUploader = () => {};
  const compare = process.env.BENCH_BIG_COMPARE !== '0';
  await freshDatabase(URL);
  const apiEnv = {
    DATABASE_URL: URL,
    API_KEYS: 'tenant-a:key-a,tenant-b:key-b',
    QUEUE_PREFIX: `{bench-big-${randomUUID().slice(0, 8)}}`,
    LOG_LEVEL: 'warn',
    // As deployed: V8's heap limit from infra/k8s/api.yaml.
    NODE_OPTIONS: deployedNodeOptions('api'),
  };
  const configs: Array<{ name: string; env: Record<string, string> }> = [
    ...(compare ? [{ name: 'unlimited', env: { LARGE_WRITES_IN_FLIGHT: '0' } }] : []),
    { name: 'one at a time', env: {} },
  ];
  const apis: Array<Child & { url: string }> = [];
  // BENCH_PARTS_COMPRESSION=pglz: the large parts compressed as before migration 0013 (the A/B of
  // what TOAST compression costs Postgres, run back to back with the default, lz4).
  const compression = process.env.BENCH_PARTS_COMPRESSION;
  if (compression) {
    if (!/^(pglz|lz4)$/.test(compression)) throw new Error('BENCH_PARTS_COMPRESSION: pglz or lz4');
    const admin = new pg.Client({ connectionString: URL });
    await admin.connect();
    for (const column of ['text', 'tool_input', 'tool_output', 'tool_error'])
      await admin.query(`alter table parts alter column ${column} set compression ${compression}`);
    await admin.end();
  }
  console.log(`large parts compressed with ${compression ?? 'the schema default (lz4 where available)'}`);
  try {
    for (const config of configs) apis.push(await startApiProcess({ ...apiEnv, ...config.env }));
    const first = apis[0]!.url;
    const sessions = [
      ...configs.map((_, c) => ['key-a', `big-${c}`] as const),
      ['key-a', 'busy'],
      ['key-b', 'quiet'],
      ...Array.from({ length: OTHER_SESSIONS }, (_, s) => ['key-b', `other-${s}`] as const),
    ] as const;
    for (const [key, id] of sessions) {
      const created = await fetch(`${first}/v1/sessions`, {
        method: 'POST',
        headers: apiHeaders(key),
        body: JSON.stringify({ id, model: { id: 'gpt-4o' } }),
      });
      if (created.status !== 201) throw new Error(`session ${id}: ${created.status}`);
    }
    const history = Array.from({ length: 40 }, (_, i) => ({
      id: `q${i}`,
      role: i % 2 === 0 ? 'user' : 'assistant',
      parts: [{ type: 'text', text: `step ${i}: run the tests and read the log again` }],
    }));
    if ((await post(first, 'key-b', 'quiet', JSON.stringify({ messages: history }))) !== 201)
      throw new Error('tenant B history');

    const uploader = await uploaderProcess(fileURLToPath(import.meta.url));
    stopUploader = () => uploader.stop();
    console.log(
      `bodies: ${uploader.sizes[0].toFixed(1)} MiB (one part), ${uploader.sizes[1].toFixed(1)} MiB (1,000 messages), ` +
        `sent by a process of their own`,
    );

    // B's rate: one read every 20 ms, or 3× a read's own time (one after another) when the
    // machine makes it slower, so that B alone keeps the API at most a third busy.
    const alone: number[] = [];
    for (let i = 0; i < 60; i++) {
      const started = performance.now();
      await readContext(first);
      alone.push(performance.now() - started);
    }
    const everyMs =
      Number(process.env.BENCH_READ_EVERY_MS) || Math.max(20, Math.ceil(3 * spread(alone.slice(20)).p50));
    console.log(
      `B's read alone: p50 ${spread(alone.slice(20)).p50.toFixed(1)} ms; B reads every ${everyMs} ms; ${loadNote()}`,
    );

    const results: Array<{ name: string; idle: Spread; sequential: Spread; concurrent: Spread }> = [];
    for (const [c, config] of configs.entries()) {
      const api = apis[c]!;
      const session = `big-${c}`;
      // Warm up (JIT, pool connections, prepared statements) before the idle figures.
      await readLoop(api.url, everyMs, () => false, 50);
      await smallAppendLoop(api.url, everyMs, () => false, 50);
      const baseRss = memoryOf(api.process.pid!).rssMiB;
      await loopDelay(api.url);
      const idleReads = spread(await readLoop(api.url, everyMs, () => false, IDLE_READS));
      const idleDelay = await loopDelay(api.url);
      const idleLoad = loadNote();
      const sequential = await during(
        api,
        (running) => readLoop(api.url, everyMs, running),
        () => uploader.run('one after another', api.url, session),
      );
      const concurrent = await during(
        api,
        (running) => readLoop(api.url, everyMs, running),
        () => uploader.run('at once', api.url, session),
      );
      console.log(`\nlarge writes ${config.name}: API RSS before the big appends ${baseRss.toFixed(0)} MiB`);
      console.log(`tenant B context reads, API idle                       ${fmt(idleReads)}`);
      console.log(
        `    API event-loop delay p99 ${idleDelay.p99.toFixed(0)} ms, max ${idleDelay.max.toFixed(0)} ms; ${idleLoad}`,
      );
      console.log(`… while A posts 4 × 31 MiB appends one after another   ${fmt(spread(sequential.times))}`);
      console.log(phaseLine(sequential, `appends: ${largeTally(sequential.result)}`));
      console.log(`… while A posts 4 × 31 MiB appends at once             ${fmt(spread(concurrent.times))}`);
      console.log(phaseLine(concurrent, `appends: ${largeTally(concurrent.result)}`));
      results.push({
        name: config.name,
        idle: idleReads,
        sequential: spread(sequential.times),
        concurrent: spread(concurrent.times),
      });
    }
    console.log(`\ntenant B's context-read p99 (goal < 250 ms), ${loadNote()}`);
    for (const r of results)
      console.log(
        `  large writes ${r.name.padEnd(14)} idle ${r.idle.p99.toFixed(1)} ms, one after another ${r.sequential.p99.toFixed(1)} ms (${(r.sequential.p99 / r.idle.p99).toFixed(1)}× idle), ` +
          `at once ${r.concurrent.p99.toFixed(1)} ms (${(r.concurrent.p99 / r.idle.p99).toFixed(1)}× idle)`,
      );
    if (results.length === 2) {
      const [before, after] = results as [(typeof results)[0], (typeof results)[0]];
      console.log(
        `  one at a time / unlimited, same run: ${(after.sequential.p99 / before.sequential.p99).toFixed(2)}× one after another, ` +
          `${(after.concurrent.p99 / before.concurrent.p99).toFixed(2)}× at once`,
      );
    }

    const api = apis.at(-1)!;
    const idleAppends = spread(await smallAppendLoop(api.url, everyMs, () => false, SMALL_APPENDS_IDLE));
    const text = logText(CONCURRENT_APPEND_BYTES - 200, 9);
    const crowd = await during(
      api,
      (running) => smallAppendLoop(api.url, everyMs, running),
      async () => {
        const statuses: number[] = [];
        for (let wave = 0; wave < CONCURRENT_WAVES; wave++) {
          statuses.push(
            ...(await Promise.all(
              Array.from({ length: CONCURRENT_APPENDS }, (_, i) =>
                post(
                  api.url,
                  'key-a',
                  'busy',
                  JSON.stringify({
                    messages: [
                      { id: `w${wave}-${i}`, role: 'user', parts: [{ type: 'text', text: `${i} ${text}` }] },
                    ],
                  }),
                ),
              ),
            )),
          );
        }
        return statuses;
      },
    );
    console.log(`\ntenant B's failed requests: ${failures.length ? tally(failures) : 'none'}`);
    console.log(`tenant B appends to ${OTHER_SESSIONS} sessions, API idle              ${fmt(idleAppends)}`);
    console.log(
      `… while A posts ${CONCURRENT_WAVES} waves of ${CONCURRENT_APPENDS} concurrent 40 KB appends   ${fmt(spread(crowd.times))}`,
    );
    console.log(phaseLine(crowd, `A's appends: ${tally(crowd.result)}`));
    console.log(`    p99 / idle ${(spread(crowd.times).p99 / idleAppends.p99).toFixed(1)}×`);
  } finally {
    stopUploader();
    await Promise.all(apis.map((api) => api.stop()));
    await dropDatabase(URL);
  }
}

if (process.argv[2] === UPLOADER_CHILD) runUploaderChild();
else await benchmark();
