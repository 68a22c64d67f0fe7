/**
 * `npm run bench [-- filter]`: runs every `bench/*.bench.ts` in its own process, one after the
 * other (benchmarks must not share a CPU), and prints what each reports. Record results and the
 * command in docs/BENCHMARKS.md.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadNote } from './harness';

const here = dirname(fileURLToPath(import.meta.url));
const filter = process.argv[2] ?? '';
const files = readdirSync(here)
  .filter((f) => f.endsWith('.bench.ts') && f.includes(filter))
  .sort();

let failed = 0;
for (const file of files) {
  // The load beside every benchmark's figures: on a shared machine they move with it.
  console.log(`\n=== ${file} === (${loadNote()})`);
  const result = spawnSync(process.execPath, ['--import', 'tsx', join(here, file)], { stdio: 'inherit' });
  console.log(
    `=== ${file} ended ${result.status === 0 ? 'ok' : `with ${result.status ?? result.signal}`} (${loadNote()})`,
  );
  if (result.status !== 0) failed++;
}
if (files.length === 0) console.log(`no benchmark matches "${filter}"`);
process.exit(failed ? 1 : 0);
