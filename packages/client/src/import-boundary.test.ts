/**
 * The client must not import server code (eslint.config.js, `no-restricted-imports` for
 * packages/client): checked here by linting imports it must refuse and the ones it may use.
 */
import { ESLint } from 'eslint';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const eslint = new ESLint({ cwd: root });

async function problems(source: string, file = 'packages/client/src/probe.ts'): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: path.join(root, file) });
  return (result?.messages ?? []).filter((m) => m.ruleId === 'no-restricted-imports').map((m) => m.message);
}

describe('the client import boundary', () => {
  it.each([
    "import { buildServer } from '@compactor/api';",
    "import type { Db } from '@compactor/db';",
    "import { resolvePolicy } from '@compactor/core';",
    "import { request } from 'node:http';",
    "import { Redis } from 'ioredis';",
    "import { x } from '../../db/src/index';",
  ])('refuses %s', async (source) => {
    expect(await problems(`${source}\nexport const probe = 1;\n`)).toHaveLength(1);
    expect(
      await problems(`${source}\nexport const probe = 1;\n`, 'packages/client/examples/probe.ts'),
    ).toHaveLength(1);
  });

  it('allows the contract, zod and its own files', async () => {
    const source =
      "import { SessionOut } from '@compactor/contract';\nimport { z } from 'zod';\nimport { send } from './transport';\nexport const probe = [SessionOut, z, send];\n";
    expect(await problems(source)).toEqual([]);
  });
});
