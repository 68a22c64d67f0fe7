/**
 * The two clients tell a model the same thing: the same recall answers and tool-call arguments go
 * through `@compactor/client` here and through the Python client (clients/python) in a child
 * `python3`, and the texts and requests that come back must be equal, byte for byte.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { recallAnswerText, recallQueryOf } from '@compactor/client';
import type { RecallResponse } from '@compactor/contract';

const clientSrc = fileURLToPath(new URL('../../clients/python/src', import.meta.url));

/** Reads `{answers, arguments}` on stdin, writes what the Python client makes of each on stdout. */
const PYTHON = `
import json, sys
from compactor_client import recall_answer_text, recall_query_of
given = json.load(sys.stdin)
json.dump({
    "texts": [recall_answer_text(answer) for answer in given["answers"]],
    "queries": [recall_query_of(arguments) for arguments in given["arguments"]],
}, sys.stdout)
`;

function python(input: unknown): Promise<{ texts: string[]; queries: unknown[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', ['-c', PYTHON], {
      env: { ...process.env, PYTHONPATH: clientSrc, PYTHONDONTWRITEBYTECODE: '1', PYTHONIOENCODING: 'utf-8' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(JSON.parse(stdout) as { texts: string[]; queries: unknown[] });
      else reject(new Error(`python3 exited ${code}: ${stderr}`));
    });
    child.stdin.end(JSON.stringify(input));
  });
}

const recency = { firstSeq: 3, lastSeq: 9, count: 2 };

const ANSWERS: RecallResponse[] = [
  {
    kind: 'call',
    callId: 'call_2',
    tool: 'bash',
    status: 'completed',
    output: 'naïve "quotes"\n✓ 3 passed 🎉',
    error: null,
    messageId: 'm_7',
    seq: 7,
    tokens: 3,
    prunedAt: null,
  },
  {
    kind: 'call',
    callId: 'call_3',
    tool: 'bash',
    status: 'error',
    output: null,
    error: null,
    messageId: 'm_8',
    seq: 8,
    tokens: 0,
    prunedAt: null,
  },
  {
    kind: 'search',
    query: 'parser',
    results: [
      {
        messageId: 'm_7',
        seq: 7,
        role: 'assistant',
        source: 'cleared',
        callId: 'call_2',
        tool: null,
        excerpt: 'FAIL',
        rank: 0.6,
      },
      {
        messageId: 'm_1',
        seq: 1,
        role: 'user',
        source: 'summarized',
        callId: null,
        tool: null,
        excerpt: 'it breaks',
        rank: 0.2,
      },
    ],
  },
  { kind: 'search', query: 'zeppelin', results: [] },
  {
    kind: 'ledger',
    section: 'files',
    entries: [
      { path: 'src/api/routes.ts', kind: 'modified', ...recency },
      { path: 'docs/naïve name 🎉.md', kind: 'created', ...recency },
    ],
    total: 9,
    nextCursor: 'o2',
    throughSeq: 40,
  },
  {
    kind: 'ledger',
    section: 'commands',
    entries: [
      {
        command: 'npm test -- "a b"\necho done',
        outcome: 'failed',
        exitCode: 1,
        evidence: 'FAIL',
        ...recency,
      },
      { command: 'make', outcome: 'unknown', exitCode: 0, ...recency },
      { command: 'npm run build', outcome: 'passed', ...recency },
    ],
    total: 3,
    nextCursor: null,
    openErrors: [{ command: 'npm test -- "a b"\necho done', seq: 9, exitCode: 1 }],
    throughSeq: 12,
  },
  {
    kind: 'ledger',
    section: 'facts',
    entries: [{ kind: 'quantity', text: '30 s', ...recency }],
    total: 1,
    nextCursor: null,
    unlistedConstraints: ['Only use the stdlib.', 'Never touch the public API.'],
    throughSeq: 12,
  },
  {
    kind: 'ledger',
    section: 'commands',
    entries: [],
    total: 0,
    nextCursor: null,
    openErrors: [],
    unlistedConstraints: [],
    throughSeq: 0,
  },
];

const ARGUMENTS = [
  '',
  'not json',
  '[]',
  '{}',
  '{"callId":"call_1"}',
  '{"callId":""}',
  '{"query":"parser"}',
  '{"query":"parser","limit":3}',
  '{"query":"parser","limit":3.0}',
  '{"query":"parser","limit":1.5}',
  '{"query":"parser","limit":true}',
  '{"query":"parser","limit":21}',
  '{"query":"parser","limit":null}',
  `{"query":"${'x'.repeat(500)}"}`,
  `{"query":"${'x'.repeat(501)}"}`,
  // Lengths are in code points, as zod counts them (501 emoji are 1,002 UTF-16 code units).
  `{"query":"${'🎉'.repeat(500)}"}`,
  `{"query":"${'🎉'.repeat(501)}"}`,
  '{"kind":"files"}',
  '{"kind":"commands"}',
  '{"kind":"facts"}',
  '{"kind":"secrets"}',
  '{"kind":null}',
  '{"kind":"files","limit":3}',
  '{"kind":"files","cursor":"o2"}',
  '{"kind":"files","query":"x"}',
  '{"kind":"files","callId":"call_1"}',
  '{"query":"x","kind":null}',
  '{"limit":3}',
  '{"query":"parser","path":"src"}',
];

describe('the recall texts of the TypeScript and Python clients', () => {
  it('are the same for every kind of answer and the same requests come from the same arguments', async () => {
    const fromPython = await python({ answers: ANSWERS, arguments: ARGUMENTS });
    expect(fromPython.texts).toEqual(ANSWERS.map(recallAnswerText));
    expect(fromPython.queries).toEqual(ARGUMENTS.map(recallQueryOf));
    // Both sides made requests of every form, so the comparison covers them all.
    expect(fromPython.queries).toEqual(
      expect.arrayContaining([{ callId: 'call_1' }, { q: 'parser', limit: 3 }, { kind: 'facts' }, null]),
    );
  });
});
