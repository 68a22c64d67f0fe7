/**
 * Appends that could stall other tenants: (1) tenant A posts 31 MiB appends (one after another,
 * then four at once, the most one API process takes) while tenant B reads its own session's context in a loop; (2) 50
 * concurrent 40 KB appends to one session of tenant A while tenant B appends to its own sessions.
 * Each is measured against the same loop on an idle API in the same run; the API runs as its own
 * process (`npm run api`), sampled for its resident memory. `npm run bench -- big-appends`.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import pg from 'pg';
import { deployedNodeOptions, dropDatabase, freshDatabase, memoryOf, startApiProcess } from './processes';
import { apiHeaders, spread, type Spread } from './harness';

const URL =
  process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_big_appends';
const MiB = 1024 * 1024;
const BIG_BODY_BYTES = 31 * MiB;
const IDLE_READS = 200;
const SMALL_APPENDS_IDLE = 100;
const CONCURRENT_APPENDS = 50;
const CONCURRENT_APPEND_BYTES = 40 * 1024;
const CONCURRENT_WAVES = 3;
const OTHER_SESSIONS = 4;

/** A tool's log output, varied enough that the tokenizer merges as on real text. */
function logText(bytes: number, seed: number): string {
  const words = [
    'error',
    'expected',
    'received',
    'src/app.ts:41:7',
    'at',
    'Object.<anonymous>',
    'PASS',
    'FAIL',
  ];
  const lines: string[] = [];
  let length = 0;
  for (let i = 0; length < bytes; i++) {
    const line = `${i + seed} ${words[(i * 7) % words.length]} ${words[(i * 3 + seed) % words.length]} 0x${(i * 2654435761).toString(16)}`;
    lines.push(line);
    length += line.length + 1;
  }
  return lines.join('\n').slice(0, bytes);
}

/** One 31 MiB append: a single tool output, or 1,000 messages of ~31 KB each. */
function bigBody(shape: 'one-part' | 'many-messages', seed: number): string {
  if (shape === 'one-part') {
    // Each line break travels as two bytes (`\\n`).
    const output = logText(Math.floor(BIG_BODY_BYTES * 0.975), seed);
    return JSON.stringify({
      messages: [
        {
          id: `big-${seed}`,
          role: 'assistant',
          parts: [
            {
              type: 'tool',
              callId: 'c1',
              tool: 'bash',
              status: 'completed',
              input: { cmd: 'cat log' },
              output,
            },
          ],
        },
      ],
    });
  }
  const each = Math.floor((BIG_BODY_BYTES * 0.975) / 1000) - 200;
  return JSON.stringify({
    messages: Array.from({ length: 1000 }, (_, i) => ({
      id: `big-${seed}-${i}`,
      role: 'assistant',
      parts: [
        {
          type: 'tool',
          callId: `c${i}`,
          tool: 'bash',
          status: 'completed',
          input: { i },
          output: logText(each, seed + i),
        },
      ],
    })),
  });
}

async function post(api: string, key: string, session: string, body: string | Uint8Array): Promise<number> {
  const response = await fetch(`${api}/v1/sessions/${session}/messages`, {
    method: 'POST',
    headers: apiHeaders(key),
    body,
  });
  await response.arrayBuffer();
  return response.status;
}

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

/** Statuses of tenant B's requests that failed (a 503 when the API's pool wait timed out). */
const failures: number[] = [];

/** Tenant B's context reads, one every 20 ms. */
function readLoop(api: string, running: () => boolean, min = 0): Promise<number[]> {
  return steadyLoad(
    async () => {
      const response = await fetch(`${api}/v1/sessions/quiet/context`, { headers: apiHeaders('key-b') });
      await response.arrayBuffer();
      if (response.status !== 200) failures.push(response.status);
    },
    20,
    running,
    min,
  );
}

/** Tenant B's small appends, one every 20 ms, over its own sessions in turn. */
function smallAppendLoop(api: string, running: () => boolean, min = 0): Promise<number[]> {
  return steadyLoad(
    async (i) => {
      const body = JSON.stringify({
        messages: [{ role: 'user', parts: [{ type: 'text', text: `${randomUUID()} run the tests again` }] }],
      });
      const status = await post(api, 'key-b', `other-${i % OTHER_SESSIONS}`, body);
      if (status !== 201) failures.push(status);
    },
    20,
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

/**
 * The API's event-loop delay since the previous call, from its /metrics (prom-client resets the
 * histogram at each scrape): max and p99 in ms.
 */
async function loopDelay(api: string): Promise<{ max: number; p99: number }> {
  const text = await (await fetch(`${api}/metrics`)).text();
  const value = (name: string) =>
    Number(
      new RegExp(`^compactor_api_nodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm').exec(text)?.[1] ?? NaN,
    ) * 1000;
  return { max: value('max'), p99: value('p99') };
}

/** Runs `load` while B's loop measures; returns B's times, the load's statuses, and the API's peak RSS. */
async function during<T>(
  pid: number,
  loop: (running: () => boolean) => Promise<number[]>,
  load: () => Promise<T>,
): Promise<{
  times: number[];
  result: T;
  seconds: number;
  peakMiB: number;
  loopCpu: number;
  load: number;
  failed: number;
  delay: { max: number; p99: number };
}> {
  let running = true;
  const started = performance.now();
  await loopDelay(api.url);
  const cpuBefore = eventLoopCpuSeconds(pid);
  const failedBefore = failures.length;
  const sampling = peakRss(pid, () => running);
  const measuring = loop(() => running);
  const result = await load().finally(() => (running = false));
  const seconds = (performance.now() - started) / 1000;
  const loopCpu = eventLoopCpuSeconds(pid) - cpuBefore;
  const times = await measuring;
  const delay = await loopDelay(api.url);
  const failed = failures.length - failedBefore;
  return { times, result, seconds, peakMiB: await sampling, loopCpu, load: loadavg()[0]!, failed, delay };
}

await freshDatabase(URL);
const api = await startApiProcess({
  DATABASE_URL: URL,
  API_KEYS: 'tenant-a:key-a,tenant-b:key-b',
  QUEUE_PREFIX: `{bench-big-${randomUUID().slice(0, 8)}}`,
  LOG_LEVEL: 'warn',
  // As deployed: V8's heap limit from infra/k8s/api.yaml.
  NODE_OPTIONS: deployedNodeOptions('api'),
});
const pid = api.process.pid!;
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
  const sessions = [
    ['key-a', 'big'],
    ['key-a', 'busy'],
    ['key-b', 'quiet'],
    ...Array.from({ length: OTHER_SESSIONS }, (_, s) => ['key-b', `other-${s}`] as const),
  ] as const;
  for (const [key, id] of sessions) {
    const created = await fetch(`${api.url}/v1/sessions`, {
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
  if ((await post(api.url, 'key-b', 'quiet', JSON.stringify({ messages: history }))) !== 201)
    throw new Error('tenant B history');

  // Encoded once here: sending a 31 MiB string would encode it on this process's event loop, which
  // also times tenant B's requests.
  const encoded = (text: string) => new Uint8Array(Buffer.from(text));
  const bodies = {
    onePart: [1, 2].map((seed) => encoded(bigBody('one-part', seed))),
    many: [3, 4].map((seed) => encoded(bigBody('many-messages', seed))),
    concurrent: [5, 6, 7, 8].map((seed) => encoded(bigBody('one-part', seed))),
  };
  console.log(
    `bodies: ${(bodies.onePart[0]!.byteLength / MiB).toFixed(1)} MiB (one part), ` +
      `${(bodies.many[0]!.byteLength / MiB).toFixed(1)} MiB (1,000 messages)`,
  );
  // Warm up (JIT, pool connections, prepared statements) before the idle figures.
  await readLoop(api.url, () => false, 50);
  await smallAppendLoop(api.url, () => false, 50);
  const baseRss = memoryOf(pid).rssMiB;
  console.log(`machine load before the idle reads: ${loadavg()[0]!.toFixed(1)}`);
  await loopDelay(api.url);
  const idleReads = spread(await readLoop(api.url, () => false, IDLE_READS));
  const idleDelay = await loopDelay(api.url);

  const sequential = await during(
    pid,
    (running) => readLoop(api.url, running),
    async () => {
      const statuses: number[] = [];
      for (const body of [...bodies.onePart, ...bodies.many])
        statuses.push(await post(api.url, 'key-a', 'big', body));
      return statuses;
    },
  );
  const concurrent = await during(
    pid,
    (running) => readLoop(api.url, running),
    () => Promise.all(bodies.concurrent.map((body) => post(api.url, 'key-a', 'big', body))),
  );

  const idleAppends = spread(await smallAppendLoop(api.url, () => false, SMALL_APPENDS_IDLE));
  const text = logText(CONCURRENT_APPEND_BYTES - 200, 9);
  const crowd = await during(
    pid,
    (running) => smallAppendLoop(api.url, running),
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

  console.log(`API RSS before the big appends: ${baseRss.toFixed(0)} MiB`);
  console.log(`tenant B's failed requests: ${failures.length ? tally(failures) : 'none'}`);
  console.log(
    `API event-loop delay during the idle reads: p99 ${idleDelay.p99.toFixed(0)} ms, max ${idleDelay.max.toFixed(0)} ms`,
  );
  console.log(`tenant B context reads, API idle                       ${fmt(idleReads)}`);
  console.log(`… while A posts 4 × 31 MiB appends one after another   ${fmt(spread(sequential.times))}`);
  console.log(
    `    appends: ${tally(sequential.result)} in ${sequential.seconds.toFixed(1)} s; API peak RSS ${sequential.peakMiB.toFixed(0)} MiB; ` +
      `event loop CPU ${sequential.loopCpu.toFixed(1)} s; machine load ${sequential.load.toFixed(1)}; B's failed requests ${sequential.failed}; API event-loop delay p99 ${sequential.delay.p99.toFixed(0)} ms, max ${sequential.delay.max.toFixed(0)} ms`,
  );
  console.log(`… while A posts 4 × 31 MiB appends at once             ${fmt(spread(concurrent.times))}`);
  console.log(
    `    appends: ${tally(concurrent.result)} in ${concurrent.seconds.toFixed(1)} s; API peak RSS ${concurrent.peakMiB.toFixed(0)} MiB; ` +
      `event loop CPU ${concurrent.loopCpu.toFixed(1)} s; machine load ${concurrent.load.toFixed(1)}; B's failed requests ${concurrent.failed}; API event-loop delay p99 ${concurrent.delay.p99.toFixed(0)} ms, max ${concurrent.delay.max.toFixed(0)} ms`,
  );
  console.log(
    `p99 while appending / idle: ${(spread(sequential.times).p99 / idleReads.p99).toFixed(1)}× (one after another), ` +
      `${(spread(concurrent.times).p99 / idleReads.p99).toFixed(1)}× (at once)`,
  );
  console.log(`tenant B appends to ${OTHER_SESSIONS} sessions, API idle              ${fmt(idleAppends)}`);
  console.log(
    `… while A posts ${CONCURRENT_WAVES} waves of ${CONCURRENT_APPENDS} concurrent 40 KB appends   ${fmt(spread(crowd.times))}`,
  );
  console.log(
    `    A's appends: ${tally(crowd.result)} in ${crowd.seconds.toFixed(1)} s; API peak RSS ${crowd.peakMiB.toFixed(0)} MiB; ` +
      `event loop CPU ${crowd.loopCpu.toFixed(1)} s; machine load ${crowd.load.toFixed(1)}; B's failed requests ${crowd.failed}; API event-loop delay p99 ${crowd.delay.p99.toFixed(0)} ms, max ${crowd.delay.max.toFixed(0)} ms; ` +
      `p99 / idle ${(spread(crowd.times).p99 / idleAppends.p99).toFixed(1)}×`,
  );
} finally {
  await api.stop();
  await dropDatabase(URL);
}
