/**
 * Tenant A's flood for bench/tenant-flood.bench.ts: append loops over its sessions and a
 * compaction request every so often, run in a process of its own (forked from the benchmark's
 * script with {@link FLOOD_CHILD}) and driven over its IPC channel.
 */
import { fork } from 'node:child_process';
import { apiHeaders } from '../harness';

export const FLOOD_WRITERS = Number(process.env.BENCH_FLOOD_WRITERS ?? 100);
export const FLOOD_SESSIONS = 50;
export const FLOOD_BATCH = 20;
/** 0: A asks for no compactions (its appends alone, to tell the worker's share of B's wait). */
export const COMPACTION_EVERY_MS = Number(process.env.BENCH_COMPACTION_EVERY_MS ?? 100);

export function messages(prefix: string, count: number) {
  return Array.from({ length: count }, (_, i) => ({
    id: `${prefix}-${i}`,
    role: i % 2 === 0 ? 'user' : 'assistant',
    parts: [{ type: 'text', text: `step ${i} of ${prefix}: run the tests, then read the failing log again` }],
  }));
}

export async function post(api: string, key: string, path: string, body: unknown): Promise<number> {
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

/** Marks the process that runs A's flood (see {@link floodProcess}). */
export const FLOOD_CHILD = '--flood-of-a';

/**
 * A's flood in a process of its own, as another tenant's clients would be: in B's process its 100
 * writers' requests and responses would delay B's own on the shared event loop.
 */
export function floodProcess(script: string, api: string) {
  const child = fork(script, [FLOOD_CHILD, api], { stdio: 'inherit' });
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
export function runFloodChild(api: string): void {
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
