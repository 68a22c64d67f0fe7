/**
 * `npm run replay -- <file>... [options]` (and `compactor replay …`): replays transcripts through
 * a live Compactor and reports what compaction did and what the agent still knew. `--help`.
 */
import { Children, ServiceMissingError } from '@compactor/stack';
import { parseOptions, USAGE, UsageError } from './options';
import { runReplay } from './replay';
import { TranscriptError } from './transcript';

const children = new Children(process.env, ({ child, msg }) => process.stderr.write(`${child}: ${msg}\n`));
let interrupted = false;
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    process.stderr.write(`\n${signal}: stopping the embedded Compactor\n`);
    void children.stopAll({ last: ['llm-stub'] }).finally(() => process.exit(code));
  });
}

export async function main(argv: readonly string[]): Promise<number> {
  try {
    const options = parseOptions(argv, process.env);
    const { report } = await runReplay(options, { env: process.env, out: process.stdout, children });
    return report.runs.some((run) => run.status === 'failed') ? 1 : 0;
  } catch (error) {
    if (interrupted) return 130;
    if (error instanceof UsageError) {
      process.stderr.write(error.message ? `replay: ${error.message}\n\n${USAGE}\n` : `${USAGE}\n`);
      return error.message ? 2 : 0;
    }
    if (error instanceof TranscriptError || error instanceof ServiceMissingError) {
      process.stderr.write(`replay: ${error.message}\n`);
      return 2;
    }
    process.stderr.write(`replay failed: ${(error as Error).message}\n`);
    return 1;
  } finally {
    if (!interrupted) await children.stopAll({ last: ['llm-stub'] });
  }
}

// Open handles (event streams, keep-alive sockets) must not keep the process alive.
if (import.meta.url === `file://${process.argv[1]}`) {
  main(process.argv.slice(2)).then((code) => process.exit(code));
}
