import { describe, expect, it } from 'vitest';
import type { Message, ToolStatus } from '../model';
import { assistant, conversation, toolCall, user } from '../test-support/builders';
import { ledgerOfMessages, textOfMessage } from './extract';

const bash = (command: string, output: string, status: ToolStatus = 'completed') =>
  toolCall('Bash', { command }, output, status);

describe('ledgerOfMessages', () => {
  const session: Message[] = conversation([
    user(
      '<environment_context>cwd /repo</environment_context>\nFix parseDate in src/parser.ts; keep p99 under 250 ms on node 20.',
    ),
    assistant([
      toolCall('Read', { file_path: 'src/parser.ts' }, '1 export function parseDate'),
      toolCall('Read', { file_path: 'src/util.ts' }, '…'),
      bash('npx vitest run src/parser.test.ts', ' Tests  2 failed | 3 passed (5)'),
    ]),
    assistant([
      toolCall('Edit', { file_path: 'src/parser.ts', old_string: 'a', new_string: 'b' }, 'ok'),
      toolCall('Write', { file_path: 'src/parser.fixtures.ts', content: 'x' }, 'ok'),
      bash('npm run lint', 'error: 1 problem'),
      bash('rm   tmp/out.json', ''),
    ]),
    user('Also see https://example.com/spec#dates'),
    assistant([
      bash('npx vitest run src/parser.test.ts', ' Tests  5 passed (5)'),
      toolCall('Read', { file_path: 'src/parser.ts' }, '…'),
    ]),
  ]);

  it('extracts files, commands, facts and open errors, newest first', () => {
    const ledger = ledgerOfMessages(session);
    expect(ledger.throughSeq).toBe(5);
    expect(ledger.files).toEqual([
      { path: 'src/parser.ts', kind: 'modified', firstSeq: 2, lastSeq: 5, count: 3 },
      { path: 'tmp/out.json', kind: 'deleted', firstSeq: 3, lastSeq: 3, count: 1 },
      { path: 'src/parser.fixtures.ts', kind: 'created', firstSeq: 3, lastSeq: 3, count: 1 },
      { path: 'src/util.ts', kind: 'read', firstSeq: 2, lastSeq: 2, count: 1 },
    ]);
    expect(ledger.commands).toEqual([
      {
        command: 'npx vitest run src/parser.test.ts',
        outcome: 'passed',
        evidence: 'Tests 5 passed (5)',
        runner: 'vitest',
        firstSeq: 2,
        lastSeq: 5,
        count: 2,
      },
      { command: 'rm tmp/out.json', outcome: 'unknown', firstSeq: 3, lastSeq: 3, count: 1 },
      {
        command: 'npm run lint',
        outcome: 'failed',
        evidence: 'error: 1 problem',
        firstSeq: 3,
        lastSeq: 3,
        count: 1,
      },
    ]);
    // The vitest failure was followed by a passing vitest run; the lint failure was not.
    expect(ledger.openErrors).toEqual([{ command: 'npm run lint', seq: 3, evidence: 'error: 1 problem' }]);
    expect(ledger.facts.map((fact) => `${fact.kind}:${fact.text}`)).toEqual([
      'url:https://example.com/spec#dates',
      // Within one message, the fact written last is the newest.
      'version:node 20',
      'quantity:250 ms',
      'path:src/parser.ts',
      'identifier:parseDate',
    ]);
  });

  it("takes facts from the user's own words only: not from harness text, or as the caller splits them", () => {
    const messages = conversation([
      user('<environment_context>\nshell zsh_v5, node 18\n</environment_context>\nuse v2.1.0'),
    ]);
    expect(ledgerOfMessages(messages).facts.map((fact) => fact.text)).toEqual(['v2.1.0']);
    const everything = ledgerOfMessages(messages, { userWords: textOfMessage });
    expect(everything.facts.map((fact) => fact.text)).toEqual(['v2.1.0', 'node 18', 'zsh_v5']);
  });

  it('ignores facts in assistant and summary messages', () => {
    const messages = conversation([
      assistant('I will use node 22 and parseDate'),
      { ...user('node 20 per the summary'), summary: true },
    ]);
    expect(ledgerOfMessages(messages).facts).toEqual([]);
  });

  it('a pass of the same runner closes an earlier failure of another invocation', () => {
    const messages = conversation([
      assistant([bash('go test ./internal/a/...', '--- FAIL: TestA (0.00s)')]),
      assistant([bash('go test ./...', 'ok  \tx/internal/a\t0.1s')]),
      assistant([bash('pytest tests/test_b.py', '==== 1 failed in 0.2s ====')]),
      assistant([bash('go test ./internal/c/...', 'exit status 1')]),
    ]);
    expect(ledgerOfMessages(messages).openErrors.map((error) => error.command)).toEqual([
      'go test ./internal/c/...',
      'pytest tests/test_b.py',
    ]);
  });

  it('a command that failed and then passed keeps its last outcome only', () => {
    const messages = conversation([
      assistant([bash('make build', 'Exit code 2')]),
      assistant([bash('make build', 'done')]),
    ]);
    const [command] = ledgerOfMessages(messages).commands;
    expect(command).toEqual({ command: 'make build', outcome: 'unknown', firstSeq: 1, lastSeq: 2, count: 2 });
  });

  it('is deterministic: the same messages give the same JSON', () => {
    expect(JSON.stringify(ledgerOfMessages(session))).toBe(
      JSON.stringify(ledgerOfMessages(structuredClone(session))),
    );
  });

  it('an empty range has an empty ledger', () => {
    expect(ledgerOfMessages([])).toEqual({
      version: 1,
      throughSeq: 0,
      files: [],
      commands: [],
      facts: [],
      openErrors: [],
    });
  });
});
