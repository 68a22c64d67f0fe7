/**
 * Tenant A's 31 MiB appends in a process of their own, forked from the benchmark's script with
 * {@link UPLOADER_CHILD}: in the process that times tenant B's reads, building, sending and
 * collecting 124 MiB at once stalled its event loop for up to 0.7 s, which B's latencies then
 * counted as the API's. Another tenant's client is not in B's process either.
 */
import { fork } from 'node:child_process';
import { bigBody, MiB, postLarge } from './bodies';

/** Marks the process that sends A's large appends. */
export const UPLOADER_CHILD = '--big-appends-uploader';

type Phase = 'one after another' | 'at once';
type Results = Array<{ status: number; tries: number }>;
interface Command {
  phase: Phase;
  api: string;
  session: string;
}

/** The uploader's side: builds the bodies once, then runs each phase it is sent and answers its results. */
export function runUploaderChild(): void {
  // Encoded once: sending a 31 MiB string would encode it on every try.
  const encoded = (text: string) => new Uint8Array(Buffer.from(text));
  const bodies = {
    sequential: [
      ...[1, 2].map((seed) => encoded(bigBody('one-part', seed))),
      ...[3, 4].map((seed) => encoded(bigBody('many-messages', seed))),
    ],
    concurrent: [5, 6, 7, 8].map((seed) => encoded(bigBody('one-part', seed))),
  };
  const run = async ({ phase, api, session }: Command): Promise<Results> => {
    if (phase === 'at once')
      return Promise.all(bodies.concurrent.map((body) => postLarge(api, session, body)));
    const results: Results = [];
    for (const body of bodies.sequential) results.push(await postLarge(api, session, body));
    return results;
  };
  const gone = (error: Error | null) => {
    if (error) process.exit(1);
  };
  process.on('message', (message: Command | 'stop') => {
    if (message === 'stop') return void process.disconnect();
    void run(message).then((results) => process.send!({ results }, gone));
  });
  const sizes = [bodies.sequential[0]!, bodies.sequential[2]!].map((body) => body.byteLength / MiB);
  process.send!({ ready: sizes }, gone);
}

/** The benchmark's side: the uploader process, its body sizes (MiB) once built, and its phases. */
export async function uploaderProcess(script: string) {
  const child = fork(script, [UPLOADER_CHILD], { stdio: 'inherit' });
  child.on('error', (error) => console.error(`A's uploader: ${error.message}`));
  const next = () =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const exited = (code: number | null) => reject(new Error(`A's uploader exited (${code})`));
      child.once('exit', exited);
      child.once('message', (message) => {
        child.off('exit', exited);
        resolve(message as Record<string, unknown>);
      });
    });
  const sizes = (await next()).ready as [number, number];
  return {
    /** MiB of one body: the single tool output, the 1,000 messages. */
    sizes,
    async run(phase: Phase, api: string, session: string): Promise<Results> {
      const answer = next();
      child.send({ phase, api, session } satisfies Command);
      return (await answer).results as Results;
    },
    stop(): void {
      if (child.connected) child.send('stop');
    },
  };
}
