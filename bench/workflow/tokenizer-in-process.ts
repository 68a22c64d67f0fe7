/**
 * The exact count of a summarizer prompt in a bare process and in one that has loaded a module
 * first: `npx tsx bench/workflow/tokenizer-in-process.ts [module…]` (default `ioredis`, which the
 * worker loads through BullMQ). A module that subclasses `String` (ioredis's `VerbatimString`)
 * makes V8's optimized `charCodeAt` three to four times slower in the whole process; the counting
 * loops read code units from a typed array instead (tokenizer code-units.ts), so the three lines
 * agree (before that change: 1.0, 3.5 and 3.4 ms for this 58K-character prompt). Each case runs in
 * a child process of its own; CPU of 25 counts after 10 to warm up.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadNote } from '../harness';

const self = fileURLToPath(import.meta.url);

/** A prompt like part 1a's: 300 messages, each tool output pruned to its marker. */
function benchPrompt(): string {
  const blocks: string[] = [];
  for (let i = 0; i < 300; i += 2) {
    blocks.push(`[User]: ${`please look at module ${i} and fix the failing test `.repeat(4)}(session 1)`);
    blocks.push(`[Assistant]: Reading src/module${i + 1}.ts`);
    blocks.push(`[Assistant tool call]: read({"path":"src/module${i + 1}.ts"})`);
    blocks.push(`[Tool result]: [Old tool result content cleared — recall call_${i + 1}]`);
  }
  return `<conversation>\n${blocks.join('\n\n')}\n</conversation>`;
}

async function child(modules: string[]): Promise<void> {
  for (const name of modules) await import(name);
  const { getTokenizer } = await import('@compactor/tokenizer');
  const tokenizer = getTokenizer('o200k_base');
  const text = benchPrompt();
  const ms: number[] = [];
  for (let i = 0; i < 35; i++) {
    const before = process.cpuUsage();
    await tokenizer.count(text);
    const used = process.cpuUsage(before);
    if (i >= 10) ms.push((used.user + used.system) / 1000);
  }
  ms.sort((a, b) => a - b);
  console.log(
    `${text.length} chars: median ${ms[12]!.toFixed(2)} ms, range ${ms[0]!.toFixed(2)}–${ms.at(-1)!.toFixed(2)} ms`,
  );
}

if (process.argv[2] === '--child') {
  await child(process.argv.slice(3));
} else {
  const modules = process.argv.length > 2 ? process.argv.slice(2) : ['ioredis'];
  console.log(`exact count of a part-1a-like prompt, CPU per count (${loadNote()})`);
  for (let round = 0; round < 2; round++) {
    for (const [label, flags, loaded] of [
      ['bare process', [], []],
      [`after ${modules.join(', ')}`, [], modules],
      [
        `after ${modules.join(', ')}, --no-lazy-feedback-allocation`,
        ['--no-lazy-feedback-allocation'],
        modules,
      ],
    ] as const) {
      const out = execFileSync(process.execPath, [...flags, '--import', 'tsx', self, '--child', ...loaded]);
      console.log(`  ${label.padEnd(60)} ${out.toString().trim()}`);
    }
  }
}
