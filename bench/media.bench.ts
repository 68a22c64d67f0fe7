/**
 * Media (docs/MEDIA.md): a session of 100 screenshots (about 50 MB of PNG data URLs, each after
 * the screenshot tool call that took it) is appended through the real ingest (header read, token
 * count per the model's family, bytes stored out of line), its context served, then compacted
 * with the LLM stub (in this process, zero latency: its time is counted in the compaction's).
 * Goals (issue 41): the compaction under 5 s, its summarizer requests under 1 MB, every served
 * context within the usable input by the provider's own count (OpenAI's tiles for gpt-4o), and
 * the newest images the media budget keeps served byte for byte as posted.
 * `npm run bench -- media` (BENCH_MEDIA_SHOTS, BENCH_MEDIA_SHOT_KB change the session).
 */
import { randomBytes } from 'node:crypto';
import { openaiImageTokens, readImageHeader, bytesSource, type OpenAIChatMessage } from '@compactor/core';
import { isWellFormedBase64, parseDataUrl, type MessageInput } from '@compactor/contract';
import {
  appendToSession,
  createDatabase,
  insertSession,
  newId,
  prepareMessages,
  type SessionRow,
} from '@compactor/db';
import { createLlm } from '@compactor/llm';
import { startLlmStub } from '@compactor/llm-stub';
import { createJobQueues, startCompaction } from '@compactor/queue';
import { sessionContext } from '@compactor/sessions';
import { deleteQueueKeys } from '@compactor/stack';
import { getTokenizer } from '@compactor/tokenizer';
import { noEvents, runCompaction, silentLog } from '@compactor/workflow';
import { dropDatabase, freshDatabase, loadNote } from './processes';

const DATABASE_URL =
  process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/compactor_bench_media';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const SHOTS = Number(process.env.BENCH_MEDIA_SHOTS ?? 100);
const SHOT_KB = Number(process.env.BENCH_MEDIA_SHOT_KB ?? 500);
const MODEL = 'gpt-4o';
const WINDOW = 128_000;

const row = (label: string, value: string) => console.log(`${label.padEnd(58)} ${value}`);

/** A 2560×1440 PNG header and `kb` KB of incompressible bytes: a screenshot's size, not its pixels. */
function screenshot(kb: number): string {
  const bytes = randomBytes(kb * 1024);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(bytes, 0);
  bytes.writeUInt32BE(13, 8);
  bytes.write('IHDR', 12, 'ascii');
  bytes.writeUInt32BE(2560, 16);
  bytes.writeUInt32BE(1440, 20);
  return `data:image/png;base64,${bytes.toString('base64')}`;
}

/** Turn `i`: the agent takes a screenshot; the user message after it carries the image. */
function turn(i: number, url: string, files: 'data' | 'link' = 'data'): MessageInput[] {
  if (files === 'link') url = `https://screens.example.test/settings-${i}.png`;
  return [
    {
      id: `a${i}`,
      role: 'assistant',
      parts: [
        { type: 'text', text: `Checking the layout of settings page ${i}.` },
        {
          type: 'tool',
          callId: `call_${i}`,
          tool: 'screenshot',
          status: 'completed',
          input: { page: `/settings/${i}`, fullPage: true },
          output: `Saved screenshot of /settings/${i} (2560×1440).`,
        },
      ],
      finish: 'tool-calls',
    },
    {
      id: `u${i}`,
      role: 'user',
      parts: [
        { type: 'text', text: `Screenshot of /settings/${i}: the save button overlaps the footer.` },
        { type: 'file', mime: 'image/png', filename: `settings-${i}.png`, url },
      ],
    },
  ] as MessageInput[];
}

/** Tokens of a served Chat Completions context as OpenAI counts it: text by o200k, images by tiles. */
function providerTokens(messages: OpenAIChatMessage[]): { tokens: number; images: string[] } {
  const tokenizer = getTokenizer('o200k_base');
  let tokens = 0;
  const images: string[] = [];
  for (const message of messages) {
    tokens += 4; // per-message framing
    const content = (message as { content?: unknown }).content;
    if (typeof content === 'string') tokens += tokenizer.countSync(content);
    else if (Array.isArray(content))
      for (const part of content as Array<Record<string, unknown>>) {
        if (part['type'] === 'text') tokens += tokenizer.countSync(String(part['text']));
        if (part['type'] === 'image_url') {
          const url = (part['image_url'] as { url: string }).url;
          const parsed = parseDataUrl(url);
          if (!parsed || !isWellFormedBase64(parsed.base64))
            throw new Error('an image that is not a data URL');
          const header = readImageHeader(bytesSource(Buffer.from(parsed.base64.slice(0, 64), 'base64')));
          if (!header) throw new Error('an image without a readable header');
          tokens += openaiImageTokens(header.width, header.height, 'auto');
          images.push(url);
        }
      }
    const calls = (message as { tool_calls?: unknown[] }).tool_calls;
    if (calls) tokens += tokenizer.countSync(JSON.stringify(calls));
  }
  return { tokens, images };
}

await freshDatabase(DATABASE_URL);
const database = createDatabase(DATABASE_URL, {
  statementTimeoutMs: 0,
  applicationName: 'compactor-bench-media',
  max: 10,
});
const { db } = database;
const stub = await startLlmStub();
const prefix = `{bench-media-${Date.now()}}`;
const queues = createJobQueues({ connection: { url: REDIS_URL, maxRetriesPerRequest: null }, prefix });
const tokenizer = getTokenizer('o200k_base');
const counter = { count: async (text: string) => tokenizer.countSync(text) };
let failed = false;
try {
  const session = (await insertSession(db, {
    tenantId: 'bench-media',
    id: newId('ses'),
    modelId: MODEL,
    provider: 'openai',
    contextWindow: WINDOW,
    maxOutputTokens: 16_384,
    policy: {},
    createHash: 'bench',
  })) as SessionRow;
  const target = { tenantId: session.tenantId, id: session.id, modelId: MODEL };
  // The baseline, in this process: the same session with its images as links (no bytes).
  const linked = (await insertSession(db, {
    tenantId: 'bench-media',
    id: newId('ses'),
    modelId: MODEL,
    provider: 'openai',
    contextWindow: WINDOW,
    maxOutputTokens: 16_384,
    policy: {},
    createHash: 'bench',
  })) as SessionRow;
  const linkedTarget = { tenantId: linked.tenantId, id: linked.id, modelId: MODEL };
  const shots = Array.from({ length: SHOTS }, () => screenshot(SHOT_KB));
  const postedBytes = shots.reduce((total, url) => total + url.length, 0);

  // Ingest: 10 turns a batch (about 7 MB of JSON, as an agent's client would post them).
  const ingest = async (into: typeof target, files: 'data' | 'link') => {
    const ingestStarted = performance.now();
    for (let i = 0; i < SHOTS; i += 10) {
      const inputs = shots.slice(i, i + 10).flatMap((url, k) => turn(i + k, url, files));
      const batch = await prepareMessages(inputs, counter, new Date(), { mediaFamily: 'openai' });
      const outcome = await appendToSession(db, into, batch);
      if (outcome.kind !== 'appended') throw new Error(`append ended ${outcome.kind}`);
    }
    return performance.now() - ingestStarted;
  };
  const baselineIngestMs = await ingest(linkedTarget, 'link');
  const ingestMs = await ingest(target, 'data');
  const stored = await db.$client.query(
    `select count(*)::int as n, sum(size_bytes)::bigint as bytes from media_objects where tenant_id = $1`,
    [session.tenantId],
  );
  const partBytes = await db.$client.query(
    `select sum(octet_length(url))::bigint as bytes, sum(tokens)::int as tokens from parts where session_pk = $1 and type = 'file'`,
    [session.pk],
  );
  row('screenshots posted', `${SHOTS} × ${SHOT_KB} KB = ${(postedBytes / 1e6).toFixed(1)} MB of data URLs`);
  row(
    'ingest (header read, count, hash, store)',
    `${(ingestMs / 1000).toFixed(2)} s (${(ingestMs / SHOTS).toFixed(1)} ms a screenshot)`,
  );
  row(
    'baseline: the same turns with images as links',
    `${(baselineIngestMs / 1000).toFixed(2)} s (data URLs ${(ingestMs / baselineIngestMs).toFixed(1)}×)`,
  );
  row('media objects stored', `${stored.rows[0].n}, ${(Number(stored.rows[0].bytes) / 1e6).toFixed(1)} MB`);
  row(
    'file parts in the parts table',
    `${(Number(partBytes.rows[0].bytes) / 1e3).toFixed(1)} KB of references, ${partBytes.rows[0].tokens} tokens (OpenAI tiles)`,
  );

  const resources = {
    db,
    tokenizerFor: () => tokenizer,
    events: { subscribe: () => () => undefined },
  } as never;
  const check = async (label: string) => {
    const started = performance.now();
    const served = await sessionContext(resources, target, { format: 'openai', fit: 'auto' });
    const readMs = performance.now() - started;
    const counted = providerTokens(served.messages as OpenAIChatMessage[]);
    const fits = served.usable === null || counted.tokens <= served.usable;
    const intact = counted.images.every((url) => shots.includes(url));
    const newest = counted.images.length > 0 && counted.images.at(-1) === shots.at(-1);
    row(
      `${label}: served context`,
      `${counted.tokens} tokens by OpenAI's count (usable ${served.usable}), ${counted.images.length} images, fit ${served.fit}, read ${readMs.toFixed(0)} ms`,
    );
    row(`${label}: fits / kept images intact / newest served`, `${fits} / ${intact} / ${newest}`);
    if (!fits || !intact || !newest) failed = true;
  };
  await check('before compaction');

  // Compaction: requested as a client would, run by this process as a worker would.
  const llm = createLlm({ apiKey: 'stub', baseURL: stub.url, timeoutMs: 60_000 });
  const dispatch = { db, queues, events: noEvents, log: silentLog, clock: () => new Date() };
  const compact = async (of: SessionRow) => {
    const { compaction } = await startCompaction(dispatch, of, { reason: 'manual' });
    const started = performance.now();
    const outcome = await runCompaction({ db, llm, clock: () => new Date(), log: silentLog }, compaction.id, {
      lastAttempt: true,
    });
    return { outcome, ms: performance.now() - started };
  };
  const baseline = await compact(linked);
  const requestsBefore = stub.requests.length;
  const { outcome, ms: compactMs } = await compact(session);
  const requests = stub.requests.slice(requestsBefore);
  const largest = Math.max(0, ...requests.map((r) => Buffer.byteLength(JSON.stringify(r.messages))));
  row('compaction', `${outcome.status} in ${(compactMs / 1000).toFixed(2)} s (goal < 5 s)`);
  row(
    'baseline: the same session with images as links',
    `${baseline.outcome.status} in ${(baseline.ms / 1000).toFixed(2)} s (data URLs ${(compactMs / baseline.ms).toFixed(2)}×)`,
  );
  row(
    'summarizer requests / largest (messages as JSON)',
    `${requests.length} / ${(largest / 1e3).toFixed(1)} KB (goal < 1 MB)`,
  );
  if (outcome.status !== 'completed' || compactMs > 5000 || largest > 1e6) failed = true;
  await check('after compaction');
  row('machine', loadNote());
} finally {
  await queues.close();
  await stub.close();
  await database.close();
  await deleteQueueKeys(REDIS_URL, prefix);
  await dropDatabase(DATABASE_URL);
}
if (failed) {
  console.log('NOT MET: see the rows above');
  process.exitCode = 1;
}
