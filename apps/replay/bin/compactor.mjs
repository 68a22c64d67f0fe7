#!/usr/bin/env node
// The project's command line: `compactor replay <file>... [options]`. TypeScript runs from source
// (no build step, see the README's stack decisions), through tsx's loader.
import { register } from 'tsx/esm/api';

const [command, ...rest] = process.argv.slice(2);
if (command !== 'replay') {
  process.stderr.write(
    `usage: compactor replay <file>... [options]   (compactor replay --help for the options)\n` +
      (command && command !== '--help' && command !== '-h' ? `unknown command: ${command}\n` : ''),
  );
  process.exit(command && command !== '--help' && command !== '-h' ? 2 : 0);
}
register();
const { main } = await import('../src/main.ts');
process.exit(await main(rest));
