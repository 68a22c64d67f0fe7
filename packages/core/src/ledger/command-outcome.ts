/**
 * How a command ended, read from what its output states: an exit status (`Exit code 1`, `exit
 * status 2`, `<shellId: 3 completed with exit code 0>`, `Process exited with code 1`), else a test
 * runner's summary (`Tests: 3 failed`, `=== 2 failed, 5 passed ===`, `--- FAIL`, `ok  pkg`,
 * `test result: ok.`), else an error line (`error:`, `npm ERR!`, a Python traceback, `command not
 * found`). Output that states nothing of the kind is `unknown`: silence is not success.
 */
import { capText, MAX_LEDGER_EVIDENCE_CHARS, type CommandOutcome } from './types';

/** The outcome, the exit status when stated, and the line that said so. */
export interface StatedOutcome {
  outcome: CommandOutcome;
  exitCode?: number;
  evidence?: string;
}

const EXIT_STATUS =
  /\b(?:exit(?:ed)?(?: with)?[ _-]?(?:code|status)|exit_code|returncode|return code)\s*[:=]?\s*(-?\d{1,3})\b/gi;

/** Test-runner summaries that say something failed, most specific first. */
const FAILED_SUMMARIES: readonly RegExp[] = [
  /^.*\bTests?:?\s+[1-9]\d* failed\b.*$/m, // jest, vitest, playwright
  /^.*\b[1-9]\d* (?:failed|failing|errors?)\b.*\b(?:passed|in [\d.]+s)\b.*$/m, // pytest, mocha
  /^.*\b[1-9]\d* failed\b.*$/m,
  /^.*\btest result: FAILED\b.*$/m, // cargo
  /^--- FAIL\b.*$/m, // go test
  /^FAIL\b.*$/m,
  /^.*\b[1-9]\d* failing\b.*$/m, // mocha
  /^FAILED\b.*$/m,
  /^.*\bBUILD FAILED\b.*$/m,
];

const ERROR_LINES: readonly RegExp[] = [
  /^(?:error|fatal)(?:\[\w+\])?:.*$/im,
  /^.*\berror TS\d+:.*$/m,
  /^npm ERR!.*$/m,
  /^npm error .*$/m,
  /^Traceback \(most recent call last\):.*$/m,
  /^.*: command not found$/m,
  /^.*: No such file or directory$/m,
];

const PASSED_SUMMARIES: readonly RegExp[] = [
  /^.*\bTests?:?\s+\d+ passed\b.*$/m,
  /^.*\b\d+ passed\b.*$/m,
  /^.*\btest result: ok\b.*$/m,
  /^ok\s+\S+\s+(?:[\d.]+m?s\b|\(cached\)).*$/m, // go test
  /^PASS\b.*$/m,
  /^.*\b\d+ passing\b.*$/m,
  /^.*\bBUILD SUCCESS(?:FUL)?\b.*$/m,
];

function evidence(line: string): string {
  return capText(line.trim().replace(/\s+/g, ' '), MAX_LEDGER_EVIDENCE_CHARS);
}

function firstMatch(text: string, patterns: readonly RegExp[]): string | null {
  for (const pattern of patterns) {
    const match = pattern.exec(text);
    if (match) return match[0];
  }
  return null;
}

/** What is read of an output: its head and tail, where harnesses and runners state outcomes. */
const HEAD_CHARS = 2_000;
const TAIL_CHARS = 8_000;
/** Longest line read: summaries are short, and bounded lines keep every pattern linear. */
const MAX_LINE_CHARS = 300;

function outcomeText(output: string): string {
  const sampled =
    output.length <= HEAD_CHARS + TAIL_CHARS
      ? output
      : `${output.slice(0, HEAD_CHARS)}\n${output.slice(-TAIL_CHARS)}`;
  return sampled
    .split('\n')
    .map((line) => line.slice(0, MAX_LINE_CHARS))
    .join('\n');
}

/**
 * What `output` states about how the command ended. `failedCall`: the tool reported the call
 * itself as failed (`status: 'error'`), which is a failure whatever the text says.
 */
export function statedOutcome(fullOutput: string, failedCall = false): StatedOutcome {
  const output = outcomeText(fullOutput);
  const statuses = [...output.matchAll(EXIT_STATUS)];
  const last = statuses.at(-1);
  if (last) {
    const exitCode = Number(last[1]);
    return { outcome: exitCode === 0 ? 'passed' : 'failed', exitCode, evidence: evidence(last[0]) };
  }
  const failed = firstMatch(output, FAILED_SUMMARIES) ?? firstMatch(output, ERROR_LINES);
  if (failed !== null) return { outcome: 'failed', evidence: evidence(failed) };
  if (failedCall) {
    const firstLine = output.split('\n').find((line) => line.trim() !== '');
    return { outcome: 'failed', ...(firstLine ? { evidence: evidence(firstLine) } : {}) };
  }
  const passed = firstMatch(output, PASSED_SUMMARIES);
  if (passed !== null) return { outcome: 'passed', evidence: evidence(passed) };
  return { outcome: 'unknown' };
}

const RUNNERS: readonly (readonly [RegExp, string])[] = [
  [/^(?:npx |pnpm (?:exec |dlx )?|yarn |bunx )?vitest\b/, 'vitest'],
  [/^(?:npx |pnpm (?:exec )?|yarn |bunx )?jest\b/, 'jest'],
  [/^(?:npx |pnpm (?:exec )?|yarn )?playwright test\b/, 'playwright'],
  [/^(?:npx |yarn )?mocha\b/, 'mocha'],
  [/^(?:python3? -m )?pytest\b/, 'pytest'],
  [/^(?:uv run |poetry run )(?:python3? -m )?pytest\b/, 'pytest'],
  [/^python3? -m unittest\b/, 'unittest'],
  [/^go test\b/, 'go test'],
  [/^cargo (?:test|nextest)\b/, 'cargo test'],
  [/^(?:npm|pnpm|yarn|bun) (?:run )?test\b/, 'npm test'],
  [/^bun test\b/, 'bun test'],
  [/^deno test\b/, 'deno test'],
  [/^dotnet test\b/, 'dotnet test'],
  [/^(?:mvn|\.\/mvnw)\b.*\btest\b/, 'maven'],
  [/^(?:gradle|\.\/gradlew)\b.*\btest\b/, 'gradle'],
  [/^(?:bundle exec )?rspec\b/, 'rspec'],
  [/^(?:vendor\/bin\/)?phpunit\b/, 'phpunit'],
  [/^make (?:test|check)\b/, 'make test'],
];

/**
 * The test runner a command line invokes, looking at each simple command after `cd …&&` and the
 * like; `undefined` for a command that runs no tests.
 */
export function testRunnerOf(command: string): string | undefined {
  for (const segment of command.split(/&&|\|\||;|\n|\|/)) {
    const words = segment.trim().replace(/^(?:(?:\w+=\S*|sudo|env|time|timeout \d+\w?)\s+)+/, '');
    for (const [pattern, runner] of RUNNERS) if (pattern.test(words)) return runner;
  }
  return undefined;
}
