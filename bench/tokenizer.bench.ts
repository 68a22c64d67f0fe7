/**
 * @compactor/tokenizer against the other JS tokenizers: `npm run bench -- tokenizer`.
 *
 * Inputs are real text read from node_modules (so they are the same wherever the lockfile is):
 * 1 MB of prose (the packages' README.md files), 1 MB of code (typescript.js), 1 MB of non-Latin
 * text (TypeScript's localized messages), and runs without whitespace, the case where
 * tiktoken-style BPE is quadratic, up to 5.1 million combining marks in one piece. Reports
 * rank-loading time, time and throughput per input, the ratio to gpt-tokenizer, js-tiktoken and
 * tiktoken (WASM) where they finish in reasonable time, and the longest event-loop blockage while
 * `count()` works through 1 MB that contains a 100,000-character run.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { getTokenizer, type EncodingName, type Tokenizer } from '@compactor/tokenizer';
import { countTokens as gptTokenizerO200k } from 'gpt-tokenizer/encoding/o200k_base';
import { Tiktoken as JsTiktoken } from 'js-tiktoken/lite';
import o200kRanks from 'js-tiktoken/ranks/o200k_base';
import { get_encoding as getWasmEncoding } from 'tiktoken';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const nodeModules = join(root, 'node_modules');

type Counter = (text: string) => number;

function readProse(chars: number): string {
  const readmes = readdirSync(nodeModules)
    .filter((name) => !name.startsWith('.') && existsSync(join(nodeModules, name, 'README.md')))
    .sort()
    .map((name) => readFileSync(join(nodeModules, name, 'README.md'), 'utf8'));
  let prose = readmes.join('\n\n');
  while (prose.length < chars) prose += '\n\n' + prose;
  return prose.slice(0, chars);
}

function readCode(chars: number): string {
  return readFileSync(join(nodeModules, 'typescript/lib/typescript.js'), 'utf8').slice(0, chars);
}

/** TypeScript's diagnostic messages in Japanese, Korean, Chinese and Russian: the non-ASCII path. */
function readNonLatin(chars: number): string {
  return ['ja', 'ko', 'zh-cn', 'ru']
    .map((locale) =>
      readFileSync(join(nodeModules, `typescript/lib/${locale}/diagnosticMessages.generated.json`), 'utf8'),
    )
    .join('\n')
    .slice(0, chars);
}

/** Best of `repeats` wall-clock times in ms, and the count (all runs must agree). */
function time(count: Counter, text: string, repeats: number): { ms: number; tokens: number } {
  let best = Infinity;
  let tokens = -1;
  for (let i = 0; i < repeats; i++) {
    const start = performance.now();
    tokens = count(text);
    best = Math.min(best, performance.now() - start);
  }
  return { ms: best, tokens };
}

function loadCompetitors(): Record<string, Counter> {
  const jsTiktoken = new JsTiktoken(o200kRanks);
  const wasm = getWasmEncoding('o200k_base');
  const noSpecial = { allowedSpecial: new Set<string>(), disallowedSpecial: new Set<string>() };
  return {
    'gpt-tokenizer': (text) => gptTokenizerO200k(text, noSpecial),
    'js-tiktoken': (text) => jsTiktoken.encode(text, [], []).length,
    'tiktoken (WASM)': (text) => wasm.encode(text, [], []).length,
  };
}

/** Longest gap between two turns of the event loop while `work` runs, two ways. */
async function measureBlocking<T>(
  work: () => Promise<T>,
): Promise<{ result: T; maxGapMs: number; histogramMaxMs: number }> {
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  let maxGapMs = 0;
  let last = performance.now();
  let done = false;
  const turn = (): void => {
    const now = performance.now();
    maxGapMs = Math.max(maxGapMs, now - last);
    last = now;
    if (!done) setImmediate(turn);
  };
  histogram.enable();
  setImmediate(turn);
  const result = await work();
  done = true;
  histogram.disable();
  return { result, maxGapMs, histogramMaxMs: histogram.max / 1e6 };
}

/**
 * The same shape of work without any tokenizer: busy slices of `sliceMs` with a macrotask
 * between them. Its longest gap is what the machine adds (other processes, GC, timers): read the
 * tokenizer's gap against it.
 */
async function busySlices(totalMs: number, sliceMs: number): Promise<number> {
  const end = performance.now() + totalMs;
  let spins = 0;
  while (performance.now() < end) {
    const sliceEnd = performance.now() + sliceMs;
    while (performance.now() < sliceEnd) spins++;
    await new Promise((resolve) => setImmediate(resolve));
  }
  return spins;
}

const fmt = (n: number, digits = 1): string => n.toFixed(digits);

async function main(): Promise<void> {
  console.log(`node ${process.version}, ${process.platform}/${process.arch}`);

  // Rank loading: the first getTokenizer per encoding parses its table.
  const tokenizers = {} as Record<EncodingName, Tokenizer>;
  for (const encoding of ['o200k_base', 'cl100k_base'] as const) {
    const start = performance.now();
    tokenizers[encoding] = getTokenizer(encoding);
    console.log(`rank loading ${encoding}: ${fmt(performance.now() - start)} ms`);
  }
  const ours = tokenizers.o200k_base;

  const prose = readProse(1_000_000);
  const code = readCode(1_000_000);
  // The requirement: 1 MB with a 100,000-character run, under 1 s, never blocking 100 ms. First,
  // while the heap is clean: the competitors below leave garbage whose collection would show up.
  const withRun = prose.slice(0, 450_000) + '\n' + 'a'.repeat(100_000) + '\n' + code.slice(0, 450_000);
  console.log('\n1 MB with a 100,000-char run (o200k_base): the first count of the process, then warm');
  for (let round = 0; round < 3; round++) {
    const start = performance.now();
    const { result, maxGapMs, histogramMaxMs } = await measureBlocking(() => ours.count(withRun));
    console.log(
      `count (async), round ${round + 1}: ${fmt(performance.now() - start)} ms, ${result} tokens, ` +
        `longest event-loop gap ${fmt(maxGapMs)} ms (monitorEventLoopDelay max ${fmt(histogramMaxMs)} ms)`,
    );
  }
  const control = await measureBlocking(() => busySlices(300, 12));
  console.log(`control, 300 ms of 12 ms busy slices: longest event-loop gap ${fmt(control.maxGapMs)} ms`);
  const sync = time((t) => ours.countSync(t), withRun, 3);
  console.log(`countSync: ${fmt(sync.ms)} ms, ${sync.tokens} tokens`);

  // js-tiktoken needs ~100 s for 20,000 letters, so it sits out the long runs.
  const competitors = loadCompetitors();
  const everyone = Object.keys(competitors);
  const quadraticButBearable = ['gpt-tokenizer', 'tiktoken (WASM)'];
  const inputs: Array<{ label: string; text: string; against: string[]; repeats: number }> = [
    { label: '1 MB prose', text: prose, against: everyone, repeats: 3 },
    { label: '1 MB code', text: code, against: everyone, repeats: 3 },
    { label: '1 MB non-Latin', text: readNonLatin(1_000_000), against: everyone, repeats: 3 },
    { label: '2,000 × "a"', text: 'a'.repeat(2_000), against: everyone, repeats: 1 },
    { label: '20,000 × "a"', text: 'a'.repeat(20_000), against: quadraticButBearable, repeats: 1 },
    {
      label: '20,000-char base64-like run',
      text: 'QUJD'.repeat(5_000),
      against: quadraticButBearable,
      repeats: 1,
    },
  ];

  console.log('\no200k_base: ours best of 5; others best of 3 on 1 MB inputs, one run on runs; "-": not run');
  console.log(`input | ours ms | ours MB/s | ${everyone.map((name) => `${name} ms (× ours)`).join(' | ')}`);
  for (const { label, text, against, repeats } of inputs) {
    const mine = time((t) => ours.countSync(t), text, 5);
    const megabytes = Buffer.byteLength(text) / 1e6;
    const cells = everyone.map((name) => {
      if (!against.includes(name)) return '-';
      const theirs = time(competitors[name]!, text, repeats);
      const agrees = theirs.tokens === mine.tokens ? '' : ` [count ${theirs.tokens} ≠ ${mine.tokens}]`;
      return `${fmt(theirs.ms)} (× ${fmt(theirs.ms / mine.ms)})${agrees}`;
    });
    console.log(`${label} | ${fmt(mine.ms)} | ${fmt(megabytes / (mine.ms / 1000))} | ${cells.join(' | ')}`);
  }

  const oneMillion = time((t) => ours.countSync(t), 'a'.repeat(1_000_000), 1);
  console.log(`1,000,000 × "a" (one piece): ${fmt(oneMillion.ms)} ms`);
  const marks = time((t) => ours.countSync(t), '\u0301'.repeat(5_100_000), 1);
  console.log(
    `5,100,000 × U+0301 (one piece of combining marks): ${fmt(marks.ms)} ms, ${marks.tokens} tokens`,
  );

  const cl100k = time((t) => tokenizers.cl100k_base.countSync(t), prose, 5);
  const proseMegabytes = Buffer.byteLength(prose) / 1e6;
  console.log(
    `\ncl100k_base, 1 MB prose: ${fmt(cl100k.ms)} ms (${fmt(proseMegabytes / (cl100k.ms / 1000))} MB/s)`,
  );
}

await main();
