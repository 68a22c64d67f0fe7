/**
 * One tenant's flood, another tenant's appends: tenant A runs `FLOOD_WRITERS` concurrent append
 * loops over `FLOOD_SESSIONS` sessions of its own and asks for a compaction every
 * `COMPACTION_EVERY_MS` (a worker process compacts them against the LLM stub), while tenant B
 * appends to its own session, one request at a time. B's append latency under the flood is
 * measured against the same loop on the idle API in the same run (the ratio of the p99s; the goal
 * is at most 2×). The API and the worker run as their own processes, with the API's default pool
 * (`DATABASE_POOL_SIZE` 10) and turns (`TENANT_REQUESTS_IN_FLIGHT` 2), as deployed;
 * `BENCH_TENANT_REQUESTS_IN_FLIGHT` sets another number of turns (0: none, every request at
 * once), `BENCH_TENANT_YIELD_MS` how long A yields to B's running request (`TENANT_YIELD_MS`,
 * default 200; 0: never), and `BENCH_BLOCKS=6` alternates idle and flooded blocks of B's appends
 * (the ratio on a machine whose load drifts). A's flood runs in a process of its own and its writers wait out a 429's Retry-After, as
 * the clients do. With each phase it prints the load average, how busy the machine's cores were,
 * the cores the API, the worker and Postgres used and both event loops' delay: a loaded machine
 * inflates both phases; with blocks, the checkpoints the server completed and the connections the
 * API's pool opened during each kind.
 * `npm run bench -- tenant-flood`.
 */
import { fork } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { deleteQueueKeys } from '@compactor/stack';
import {
  cpuSecondsOf,
  postgresCpuSeconds,
  dropDatabase,
  freshDatabase,
  startApiProcess,
  startStubProcess,
  startWorkerProcess,
} from './processes';
import { apiHeaders, spread } from './harness';

/** A scratch database of this run's own (the Postgres may be shared), dropped at the end. */
const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ??
  `postgres://postgres@127.0.0.1:5432/compactor_bench_tenant_flood_${randomUUID().slice(0, 8)}`;
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const B_APPENDS = Number(process.env.BENCH_B_APPENDS ?? 300);
const FLOOD_WRITERS = Number(process.env.BENCH_FLOOD_WRITERS ?? 100);
const FLOOD_SESSIONS = 50;
const FLOOD_BATCH = 20;
/** 0: A asks for no compactions (its appends alone, to tell the worker's share of B's wait). */
const COMPACTION_EVERY_MS = Number(process.env.BENCH_COMPACTION_EVERY_MS ?? 100);
/** B's pause between two appends: a steady trickle, not a flood of its own. */
const B_PAUSE_MS = 10;
const IN_FLIGHT = process.env.BENCH_TENANT_REQUESTS_IN_FLIGHT;
const YIELD_MS = process.env.BENCH_TENANT_YIELD_MS;
/** How long A's flood runs alone before B's appends, its appends counted over the last of it. */
const ALONE_MS = Number(process.env.BENCH_ALONE_MS ?? 5_000);
/** More than 1: B's idle and flooded appends in that many alternating blocks (see {@link alternating}). */
const BLOCKS = Number(process.env.BENCH_BLOCKS ?? 1);

function messages(prefix: string, count: number) {
  return Array.from({ length: count }, (_, i) => ({
    id: `${prefix}-${i}`,
    role: i % 2 === 0 ? 'user' : 'assistant',
    parts: [{ type: 'text', text: `step ${i} of ${prefix}: run the tests, then read the failing log again` }],
  }));
}

async function post(api: string, key: string, path: string, body: unknown): Promise<number> {
  return (await postFor(api, key, path, body)).status;
}

async function postFor(api: string, key: string, path: string, body: unknown) {
  const response = await fetch(`${api}${path}`, {
    method: 'POST',
    headers: apiHeaders(key),
    body: JSON.stringify(body),
  });
  await response.arrayBuffer();
  return { status: response.status, retryAfter: Number(response.headers.get('retry-after') ?? 0) };
}

/** A 429's Retry-After, waited out as the clients do before their next request. */
async function backOff(answer: { status: number; retryAfter: number }): Promise<void> {
  if (answer.status === 429) await new Promise((resolve) => setTimeout(resolve, answer.retryAfter * 1000));
}

async function createSession(api: string, key: string, id: string): Promise<void> {
  const status = await post(api, key, '/v1/sessions', { id, model: { id: 'gpt-4o' } });
  if (status !== 201) throw new Error(`session ${id}: ${status}`);
}

let bAppend = 0;
/** B's `count` appends of two messages, one after another: each one's latency in ms. */
async function timeAppendsOfB(api: string, count = B_APPENDS): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const status = await post(api, 'key-b', '/v1/sessions/quiet/messages', {
      messages: messages(`b${bAppend++}`, 2),
    });
    if (status !== 201) throw new Error(`tenant B's append failed: ${status}`);
    times.push(performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, B_PAUSE_MS));
  }
  return times;
}

/** A's flood until `stop()`: append loops over its sessions and a compaction request every so often. */
function floodOfA(api: string) {
  let flooding = true;
  const started = performance.now();
  const statuses = new Map<string, number>();
  const count = (what: string) => statuses.set(what, (statuses.get(what) ?? 0) + 1);
  // Paused (alternating blocks): no request starts until resumed.
  let paused: { until: Promise<void>; resume: () => void } | undefined;
  let outstanding = 0;
  const send = async (path: string, body: unknown) => {
    if (paused) await paused.until;
    outstanding++;
    try {
      return await postFor(api, 'key-a', path, body);
    } finally {
      outstanding--;
    }
  };
  const writers = Array.from({ length: FLOOD_WRITERS }, async (_, writer) => {
    for (let wave = 0; flooding; wave++) {
      const session = `a${(writer + wave) % FLOOD_SESSIONS}`;
      const answer = await send(`/v1/sessions/${session}/messages`, {
        messages: messages(`a${writer}-${wave}`, FLOOD_BATCH),
      });
      count(`append ${answer.status}`);
      await backOff(answer);
    }
  });
  const compactions = (async () => {
    for (let n = 0; flooding && COMPACTION_EVERY_MS > 0; n++) {
      const answer = await send(`/v1/sessions/a${n % FLOOD_SESSIONS}/compactions`, {});
      count(`compaction ${answer.status}`);
      await backOff(answer);
      await new Promise((resolve) => setTimeout(resolve, COMPACTION_EVERY_MS));
    }
  })();
  return {
    stored: () => statuses.get('append 201') ?? 0,
    /** Starts no more requests and resolves once every one already sent is answered. */
    async pause() {
      let resume = () => {};
      const until = new Promise<void>((resolve) => (resume = resolve));
      paused = { until, resume };
      while (outstanding > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    },
    resume() {
      paused?.resume();
      paused = undefined;
    },
    async stop() {
      this.resume();
      flooding = false;
      await Promise.all([...writers, compactions]);
      return { statuses, seconds: (performance.now() - started) / 1000 };
    },
  };
}

/**
 * Where B's time goes besides the pool: the API's event-loop delay since the previous call (from
 * its /metrics; prom-client resets the histogram at each scrape), max and p99 in ms.
 */
async function loopDelay(api: string): Promise<{ max: number; p99: number }> {
  const text = await (await fetch(`${api}/metrics`)).text();
  const value = (name: string) =>
    Number(
      new RegExp(`^compactor_api_nodejs_eventloop_lag_${name}_seconds (\\S+)$`, 'm').exec(text)?.[1] ?? NaN,
    ) * 1000;
  return { max: value('max'), p99: value('p99') };
}

/** The machine's CPU time so far, busy and in all, in seconds over every core (/proc/stat). */
function machineCpu(): { busy: number; total: number } {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = ticks.map(Number) as number[];
  const busy = user! + nice! + system! + irq! + softirq! + steal!;
  return { busy: busy / 100, total: (busy + idle! + iowait!) / 100 };
}

/**
 * B's appends, with the API's event-loop delay and the CPU (in cores) its process used meanwhile,
 * the event-loop delay of B's own process (what of B's time is the client's, not the API's), the
 * cores the worker and every Postgres process used, and how busy the machine's cores were.
 */
async function measured(api: { url: string; process: { pid?: number } }, workerPid: number) {
  const pid = api.process.pid!;
  await loopDelay(api.url);
  const client = monitorEventLoopDelay({ resolution: 10 });
  client.enable();
  const before = { api: cpuSecondsOf(pid), worker: cpuSecondsOf(workerPid), pg: postgresCpuSeconds() };
  const [machineBefore, started] = [machineCpu(), performance.now()];
  const times = await timeAppendsOfB(api.url);
  const seconds = (performance.now() - started) / 1000;
  const machineAfter = machineCpu();
  const cores = (cpuSecondsOf(pid) - before.api) / seconds;
  const workerCores = (cpuSecondsOf(workerPid) - before.worker) / seconds;
  const postgresCores = (postgresCpuSeconds() - before.pg) / seconds;
  const machineBusy = (machineAfter.busy - machineBefore.busy) / (machineAfter.total - machineBefore.total);
  client.disable();
  const clientDelay = { p99: client.percentile(99) / 1e6, max: client.max / 1e6 };
  return {
    spread: spread(times),
    delay: await loopDelay(api.url),
    cores,
    clientDelay,
    workerCores,
    postgresCores,
    machineBusy,
  };
}

/** Marks the process that runs A's flood (see {@link floodProcess}). */
const FLOOD_CHILD = '--flood-of-a';

/**
 * A's flood in a process of its own, as another tenant's clients would be: in B's process its 100
 * writers' requests and responses would delay B's own on the shared event loop.
 */
function floodProcess(api: string) {
  const child = fork(fileURLToPath(import.meta.url), [FLOOD_CHILD, api], { stdio: 'inherit' });
  // A send to a child that died (EPIPE on a loaded machine) is reported by the request that made
  // it; unhandled, the channel's 'error' would end the benchmark without saying why.
  child.on('error', (error) => console.error(`A's flood: ${error.message}`));
  /** Sends `command` and resolves with the child's answer; rejects if it cannot be sent or the child exits first. */
  const request = (command: string) =>
    new Promise<unknown>((resolve, reject) => {
      const exited = (code: number | null) =>
        reject(new Error(`A's flood exited (${code}) before answering '${command}'`));
      child.once('exit', exited);
      child.once('message', (message) => {
        child.off('exit', exited);
        resolve(message);
      });
      child.send(command, (error) => {
        if (error) reject(new Error(`A's flood did not get '${command}': ${error.message}`));
      });
    });
  const ask = async (command: string) => ((await request(command)) as { stored: number }).stored;
  return {
    /** A's appends stored so far. */
    stored: () => ask('count'),
    /** A's flood starts no more requests; resolves once all it sent are answered. */
    pause: () => ask('pause'),
    resume: () => ask('resume'),
    async stop(): Promise<{ statuses: Map<string, number>; seconds: number }> {
      const { statuses, seconds } = (await request('stop')) as {
        statuses: Array<[string, number]>;
        seconds: number;
      };
      return { statuses: new Map(statuses), seconds };
    },
  };
}

/** The flood's process: floods until told to stop, then reports what A's requests were answered. */
function runFloodChild(api: string): void {
  const flood = floodOfA(api);
  // The parent gone (it failed, or was stopped): nothing is left to report to.
  const gone = (error: Error | null) => {
    if (error) process.exit(1);
  };
  process.on('message', (message) => {
    const answer = () => process.send!({ stored: flood.stored() }, gone);
    if (message === 'count') return void answer();
    if (message === 'pause') return void flood.pause().then(answer);
    if (message === 'resume') return void (flood.resume(), answer());
    void flood
      .stop()
      .then(({ statuses, seconds }) =>
        process.send!({ statuses: [...statuses], seconds }, (error: Error | null) =>
          error ? process.exit(1) : process.disconnect(),
        ),
      );
  });
}

/**
 * Checkpoints the server has completed so far (`pg_stat_checkpointer` from Postgres 17 on): on a
 * shared server another database's CREATE or DROP forces one (as does the WAL reaching
 * `max_wal_size`), and the full-page writes after it slow every commit, B's included, in
 * whichever block it falls.
 */
async function checkpointsSoFar(server: pg.Client): Promise<number> {
  const version = await server.query<{ n: string }>(`select current_setting('server_version_num') as n`);
  const { rows } = await server.query<{ n: string }>(
    Number(version.rows[0]!.n) >= 170000
      ? 'select num_timed + num_requested as n from pg_stat_checkpointer'
      : 'select checkpoints_timed + checkpoints_req as n from pg_stat_bgwriter',
  );
  return Number(rows[0]!.n);
}

/**
 * The server's clock, and how many of the API's connections to this database opened since a
 * reading of it: the pool opens one when a checkout finds none idle, and the request that waits
 * for it pays the open and its first statements on a new backend, several times a warm append.
 */
async function serverNow(server: pg.Client): Promise<string> {
  return (await server.query<{ now: string }>('select clock_timestamp()::text as now')).rows[0]!.now;
}
async function apiConnectionsSince(server: pg.Client, since: string): Promise<number> {
  const { rows } = await server.query<{ n: string }>(
    `select count(*) as n from pg_stat_activity
      where datname = current_database() and application_name = 'compactor-api' and backend_start >= $1`,
    [since],
  );
  return Number(rows[0]!.n);
}

/**
 * B's appends in `BLOCKS` idle blocks alternating with as many during A's flood (paused, its sent
 * requests answered, for each idle block; resumed 1 s before each flood block): on a shared machine
 * whose load drifts over minutes, both sides of the ratio then see the same load.
 */
async function alternating(api: string, flood: ReturnType<typeof floodProcess>, aloneRate: number) {
  const perBlock = Math.ceil(B_APPENDS / BLOCKS);
  const idle: number[] = [];
  const flooded: number[] = [];
  const loads: number[] = [];
  let [stored, seconds] = [0, 0];
  const checkpoints = { idle: 0, flooded: 0 };
  const opened = { idle: 0, flooded: 0 };
  const server = new pg.Client({ connectionString: DATABASE_URL, application_name: 'bench-tenant-flood' });
  await server.connect();
  try {
    for (let block = 0; block < BLOCKS; block++) {
      await flood.pause();
      loads.push(loadavg()[0]!);
      let [before, since] = [await checkpointsSoFar(server), await serverNow(server)];
      idle.push(...(await timeAppendsOfB(api, perBlock)));
      checkpoints.idle += (await checkpointsSoFar(server)) - before;
      opened.idle += await apiConnectionsSince(server, since);
      await flood.resume();
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const from = { stored: await flood.stored(), at: performance.now() };
      [before, since] = [await checkpointsSoFar(server), await serverNow(server)];
      flooded.push(...(await timeAppendsOfB(api, perBlock)));
      checkpoints.flooded += (await checkpointsSoFar(server)) - before;
      opened.flooded += await apiConnectionsSince(server, since);
      stored += (await flood.stored()) - from.stored;
      seconds += (performance.now() - from.at) / 1000;
    }
  } finally {
    await server.end();
  }
  const ms = (value: number) => `${value.toFixed(1).padStart(7)} ms`;
  const row = (label: string, times: number[]) => {
    const r = spread(times);
    console.log(
      `${label.padEnd(18)} p50 ${ms(r.p50)}   p95 ${ms(r.p95)}   p99 ${ms(r.p99)}   max ${ms(r.max)}`,
    );
    return r;
  };
  console.log(
    `tenant B's appends (2 messages, ${BLOCKS} blocks of ${perBlock} idle alternating with ${BLOCKS} during A's flood); ` +
      `A: ${FLOOD_WRITERS} concurrent ${FLOOD_BATCH}-message appends, a compaction every ${COMPACTION_EVERY_MS} ms; ` +
      `turns per tenant: ${IN_FLIGHT ?? 'the default (2)'}; yield: ${YIELD_MS ?? 'the default'} ms`,
  );
  const [a, b] = [row('API idle', idle), row("during A's flood", flooded)];
  const rate = stored / seconds;
  console.log(
    `A's appends stored a second: ${aloneRate.toFixed(0)} alone, ${rate.toFixed(0)} beside B's (${(rate / aloneRate).toFixed(2)}×)`,
  );
  console.log(
    `p99 flooded / idle: ${(b.p99 / a.p99).toFixed(2)}× (goal ≤ 2×); p95 ${(b.p95 / a.p95).toFixed(2)}×; ` +
      `p50 ${(b.p50 / a.p50).toFixed(2)}×; load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`,
  );
  console.log(
    `checkpoints the server completed during B's idle blocks: ${checkpoints.idle}, during its flooded blocks: ` +
      `${checkpoints.flooded} (each slows the commits after it: another database's CREATE or DROP on a shared server, or the WAL reaching max_wal_size)`,
  );
  console.log(
    `the API's pool opened ${opened.idle} connections during B's idle blocks, ${opened.flooded} during its flooded blocks ` +
      `(still open at the block's end; a request that opens one pays the open and a new backend's first statements)`,
  );
}

async function benchmark(): Promise<void> {
  await freshDatabase(DATABASE_URL);
  const prefix = `{bench-tenant-flood-${randomUUID().slice(0, 8)}}`;
  const stub = await startStubProcess({ LLM_STUB_LATENCY_MS: '200' });
  const env = { DATABASE_URL, REDIS_URL, QUEUE_PREFIX: prefix, LOG_LEVEL: 'warn' };
  const worker = await startWorkerProcess({ ...env, OPENAI_BASE_URL: stub.url, OPENAI_API_KEY: 'stub' });
  const api = await startApiProcess({
    ...env,
    API_KEYS: 'tenant-a:key-a,tenant-b:key-b',
    // A's compactions all run: the flood loads the workers too, not only the API.
    TENANT_MAX_ACTIVE_COMPACTIONS: '0',
    ...(IN_FLIGHT === undefined ? {} : { TENANT_REQUESTS_IN_FLIGHT: IN_FLIGHT }),
    ...(YIELD_MS === undefined ? {} : { TENANT_YIELD_MS: YIELD_MS }),
  });
  try {
    await createSession(api.url, 'key-b', 'quiet');
    for (let s = 0; s < FLOOD_SESSIONS; s++) await createSession(api.url, 'key-a', `a${s}`);
    // Warm-up: the API's first appends pay for its JIT and its connections.
    for (let s = 0; s < FLOOD_SESSIONS; s++)
      await post(api.url, 'key-a', `/v1/sessions/a${s}/messages`, {
        messages: messages(`warm${s}`, FLOOD_BATCH),
      });

    const loadIdle = loadavg()[0]!;
    const idle = await measured(api, worker.process.pid!);
    const flood = floodProcess(api.url);
    // Let A's requests fill the pool and the queues before measuring, then count A's appends alone.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const aloneFrom = { stored: await flood.stored(), at: performance.now() };
    await new Promise((resolve) => setTimeout(resolve, ALONE_MS));
    const aloneTo = { stored: await flood.stored(), at: performance.now() };
    const aloneRate = (aloneTo.stored - aloneFrom.stored) / ((aloneTo.at - aloneFrom.at) / 1000);
    if (BLOCKS > 1) {
      await alternating(api.url, flood, aloneRate);
      await flood.stop();
      return;
    }
    const loadFlood = loadavg()[0]!;
    const flooded = await measured(api, worker.process.pid!);
    const withB = { stored: await flood.stored(), at: performance.now() };
    const withBRate = (withB.stored - aloneTo.stored) / ((withB.at - aloneTo.at) / 1000);
    const { statuses, seconds } = await flood.stop();

    const ms = (value: number) => `${value.toFixed(1).padStart(7)} ms`;
    const row = (label: string, r: Awaited<ReturnType<typeof measured>>, load: number) =>
      console.log(
        `${label.padEnd(18)} p50 ${ms(r.spread.p50)}   p95 ${ms(r.spread.p95)}   p99 ${ms(r.spread.p99)}   ` +
          `max ${ms(r.spread.max)}   load ${load.toFixed(1)}   API event-loop delay p99 ${r.delay.p99.toFixed(0)} ms, ` +
          `max ${r.delay.max.toFixed(0)} ms; API CPU ${r.cores.toFixed(2)} cores; ` +
          `B's own event-loop delay p99 ${r.clientDelay.p99.toFixed(0)} ms; worker ${r.workerCores.toFixed(2)}, ` +
          `every Postgres process ${r.postgresCores.toFixed(2)} cores; machine's cores ${(r.machineBusy * 100).toFixed(0)} % busy`,
      );
    console.log(
      `tenant B's appends (2 messages, ${B_APPENDS} one after another, ${B_PAUSE_MS} ms apart); ` +
        `A: ${FLOOD_WRITERS} concurrent ${FLOOD_BATCH}-message appends over ${FLOOD_SESSIONS} sessions, ` +
        `a compaction every ${COMPACTION_EVERY_MS} ms (1 worker, stub 200 ms); ` +
        `turns per tenant: ${IN_FLIGHT ?? 'the default (2)'}; yield: ${YIELD_MS ?? 'the default'} ms`,
    );
    row('API idle', idle, loadIdle);
    row("during A's flood", flooded, loadFlood);
    console.log(
      `A's requests during the run (${seconds.toFixed(1)} s, ${((statuses.get('append 201') ?? 0) / seconds).toFixed(0)} appends stored a second): ` +
        [...statuses].map(([what, n]) => `${n} × ${what}`).join(', '),
    );
    console.log(
      `A's appends stored a second: ${aloneRate.toFixed(0)} alone (${ALONE_MS / 1000} s before B's appends), ` +
        `${withBRate.toFixed(0)} beside B's (${(withBRate / aloneRate).toFixed(2)}×)`,
    );
    console.log(
      `p99 flooded / idle: ${(flooded.spread.p99 / idle.spread.p99).toFixed(2)}× (goal ≤ 2×); ` +
        `p95 ${(flooded.spread.p95 / idle.spread.p95).toFixed(2)}×; load average now ${loadavg()[0]!.toFixed(1)}`,
    );
  } finally {
    await api.stop();
    await worker.stop();
    await stub.stop();
    await deleteQueueKeys(REDIS_URL, prefix);
    await dropDatabase(DATABASE_URL);
  }
}

if (process.argv[2] === FLOOD_CHILD) runFloodChild(process.argv[3]!);
else await benchmark();
