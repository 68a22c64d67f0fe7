import { describe, expect, it } from 'vitest';
import { statedOutcome, testRunnerOf, type StatedOutcome } from './command-outcome';

describe('statedOutcome: what a command output says about how it ended', () => {
  const cases: { name: string; output: string; failedCall?: boolean; expected: StatedOutcome }[] = [
    {
      name: 'Claude Code Bash failure',
      output: 'Exit code 1\nsrc/a.ts(3,1): error TS2304',
      expected: { outcome: 'failed', exitCode: 1, evidence: 'Exit code 1' },
    },
    {
      name: 'Copilot CLI shell trailer',
      output: 'go: added x v1\n<shellId: 3 completed with exit code 0>',
      expected: { outcome: 'passed', exitCode: 0, evidence: 'exit code 0' },
    },
    {
      name: 'Codex exec output',
      output: 'Process exited with code 2\nWall time: 0.3 seconds',
      expected: { outcome: 'failed', exitCode: 2, evidence: 'exited with code 2' },
    },
    {
      name: 'go: exit status',
      output: 'FAIL\tpkg\t0.1s\nexit status 1',
      expected: { outcome: 'failed', exitCode: 1, evidence: 'exit status 1' },
    },
    {
      name: 'the last status wins',
      output: 'exit code 1\nretrying\nexit code 0',
      expected: { outcome: 'passed', exitCode: 0, evidence: 'exit code 0' },
    },
    {
      name: 'jest summary',
      output: 'PASS a.test.js\nFAIL b.test.js\nTests:       3 failed, 5 passed, 8 total',
      expected: { outcome: 'failed', evidence: 'Tests: 3 failed, 5 passed, 8 total' },
    },
    {
      name: 'vitest summary',
      output: ' Test Files  1 failed | 2 passed (3)\n      Tests  2 failed | 10 passed (12)',
      expected: { outcome: 'failed', evidence: 'Tests 2 failed | 10 passed (12)' },
    },
    {
      name: 'pytest summary',
      output: '==== 2 failed, 3 passed in 0.52s ====',
      expected: { outcome: 'failed', evidence: '==== 2 failed, 3 passed in 0.52s ====' },
    },
    {
      name: 'pytest all passed',
      output: 'collected 5 items\n\n==== 5 passed in 0.10s ====',
      expected: { outcome: 'passed', evidence: '==== 5 passed in 0.10s ====' },
    },
    {
      name: 'go test failure',
      output: '=== RUN   TestX\n--- FAIL: TestX (0.00s)\nFAIL\nFAIL\tgithub.com/a/b\t0.01s',
      expected: { outcome: 'failed', evidence: '--- FAIL: TestX (0.00s)' },
    },
    {
      name: 'go test pass',
      output: 'ok  \tgithub.com/a/b/internal/worktree\t0.143s',
      expected: { outcome: 'passed', evidence: 'ok github.com/a/b/internal/worktree 0.143s' },
    },
    {
      name: 'cargo failure',
      output: 'test result: FAILED. 3 passed; 1 failed; 0 ignored',
      expected: { outcome: 'failed', evidence: 'test result: FAILED. 3 passed; 1 failed; 0 ignored' },
    },
    {
      name: 'cargo pass',
      output: 'running 4 tests\ntest result: ok. 4 passed; 0 failed',
      expected: { outcome: 'passed', evidence: 'test result: ok. 4 passed; 0 failed' },
    },
    {
      name: 'pytest FAILED line',
      output: 'FAILED tests/test_x.py::test_parse - AssertionError',
      expected: { outcome: 'failed', evidence: 'FAILED tests/test_x.py::test_parse - AssertionError' },
    },
    {
      name: 'compiler error line',
      output: 'error: could not compile `x` due to 2 previous errors',
      expected: { outcome: 'failed', evidence: 'error: could not compile `x` due to 2 previous errors' },
    },
    {
      name: 'npm error',
      output: 'npm ERR! missing script: tset',
      expected: { outcome: 'failed', evidence: 'npm ERR! missing script: tset' },
    },
    {
      name: 'Python traceback',
      output: 'Traceback (most recent call last):\n  File "x.py", line 1',
      expected: { outcome: 'failed', evidence: 'Traceback (most recent call last):' },
    },
    {
      name: 'missing program',
      output: '/bin/bash: line 1: python: command not found',
      expected: { outcome: 'failed', evidence: '/bin/bash: line 1: python: command not found' },
    },
    {
      name: 'a failed call says nothing recognisable',
      output: 'timed out after 120s',
      failedCall: true,
      expected: { outcome: 'failed', evidence: 'timed out after 120s' },
    },
    { name: 'silence is not success', output: 'src/a.ts\nsrc/b.ts\n', expected: { outcome: 'unknown' } },
    { name: 'empty output', output: '', expected: { outcome: 'unknown' } },
    {
      name: 'a mid-line "error:" in a listing',
      output: 'src/log.ts:12: log.error: oops',
      expected: { outcome: 'unknown' },
    },
  ];
  it.each(cases)('$name', ({ output, failedCall, expected }) => {
    expect(statedOutcome(output, failedCall)).toEqual(expected);
  });

  it("reads a long output's head and tail, where outcomes are stated, not its middle", () => {
    const middle = `${'log line\n'.repeat(5_000)}exit code 3\n${'log line\n'.repeat(5_000)}`;
    expect(statedOutcome(middle)).toEqual({ outcome: 'unknown' });
    expect(statedOutcome(`${middle}Tests: 1 failed`).outcome).toBe('failed');
    expect(statedOutcome(`Exit code 1\n${middle}`).exitCode).toBe(1);
  });

  it('caps the evidence line', () => {
    const stated = statedOutcome(`FAILED ${'x'.repeat(250)}`);
    expect(stated.evidence?.length).toBe(200);
    expect(stated.evidence?.endsWith('…')).toBe(true);
  });
});

describe('testRunnerOf', () => {
  const cases: [string, string | undefined][] = [
    ['npx vitest run packages/core', 'vitest'],
    ['cd /repo && CI=1 npx jest --silent', 'jest'],
    ['go test ./internal/... 2>&1 | tail -20', 'go test'],
    ['python -m pytest -x tests/', 'pytest'],
    ['uv run pytest', 'pytest'],
    ['cargo test --all', 'cargo test'],
    ['npm test', 'npm test'],
    ['pnpm run test -- --watch=false', 'npm test'],
    ['timeout 60 bundle exec rspec spec/a_spec.rb', 'rspec'],
    ['npm run build', undefined],
    ['grep -rn "go test" docs', undefined],
    ['echo pytest', undefined],
  ];
  it.each(cases)('%s → %s', (command, runner) => {
    expect(testRunnerOf(command)).toBe(runner);
  });
});
