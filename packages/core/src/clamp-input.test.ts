import { describe, expect, it } from 'vitest';
import { CLAMPED_INPUT_KEY, clampInput, MAX_IDENTIFYING_ARGUMENT_CHARS } from './clamp-input';
import { fitKeptMessages, type FitCounters } from './fit';
import type { ToolPart } from './model';
import { assistant, conversation, toolPart, user } from './test-support/builders';
import { estimateTokens } from './tokens';

const count: FitCounters = {
  text: (value) => estimateTokens(value),
  input: (input) => estimateTokens(JSON.stringify(input)),
};
const marker = (omitted: number) => `[... tool arguments clamped: ${omitted} left out; call c]`;

function clamp(input: unknown, cap: number, keepIdentifying = true): Record<string, unknown> {
  return clampInput(
    { input, content: JSON.stringify(input) },
    { cap, callId: 'c', countText: count.text, countInput: count.input, marker, keepIdentifying },
  ) as Record<string, unknown>;
}

const edit = 'const total = items.reduce((sum, item) => sum + item.price, 0);\n'.repeat(2);
const command = 'cd /home/me/worktrees/task-143-parser/ && go test ./internal/parser/... -run TestDates';

describe('clampInput: what a clamped call still names', () => {
  const cases: Array<{ name: string; input: Record<string, unknown>; kept: Record<string, unknown> }> = [
    {
      name: "Claude Code's Edit (no long argument): the file_path",
      input: { file_path: '/repo/src/cart.ts', old_string: edit, new_string: edit.toUpperCase() },
      kept: { file_path: '/repo/src/cart.ts' },
    },
    {
      name: "Claude Code's Bash: the command line, not its description",
      input: { command, description: 'Run the parser tests '.repeat(8), timeout: 120000 },
      kept: { command },
    },
    {
      name: "Codex's argument vector",
      input: { command: ['bash', '-lc', 'npm test'], workdir: '/repo/'.repeat(40) },
      kept: { command: ['bash', '-lc', 'npm test'] },
    },
    {
      name: 'a list of paths',
      input: { paths: ['src/a.ts', 'src/b.ts'], reason: 'why '.repeat(49), notes: 'note '.repeat(39) },
      kept: { paths: ['src/a.ts', 'src/b.ts'] },
    },
    {
      name: 'a write with a long content: the path beside the excerpt',
      input: { path: 'src/big.ts', content: 'x'.repeat(20_000) },
      kept: { path: 'src/big.ts' },
    },
  ];
  for (const { name, input, kept } of cases) {
    it(name, () => {
      for (const cap of [64, 0]) {
        const clamped = clamp(input, cap);
        expect(clamped).toMatchObject(kept);
        expect(count.input(clamped)).toBeLessThan(count.input(input));
      }
    });
  }

  it('clamps an identifying argument longer than the bound like any other', () => {
    const long = `cat <<'EOF' > notes.md\n${'line of a heredoc\n'.repeat(40)}EOF`;
    expect(long.length).toBeGreaterThan(MAX_IDENTIFYING_ARGUMENT_CHARS);
    const clamped = clamp({ command: long }, 0);
    expect(clamped['command']).not.toBe(long);
  });

  it('keeps nothing but the excerpt once told to (the last resort)', () => {
    const clamped = clamp({ file_path: '/repo/src/cart.ts', old_string: edit, new_string: edit }, 0, false);
    expect(Object.keys(clamped)).toEqual([CLAMPED_INPUT_KEY]);
  });

  it('returns arguments that are all identifying unchanged', () => {
    const input = { command: 'npm test' };
    expect(clamp(input, 0)).toBe(input);
  });
});

describe('fitKeptMessages keeps the clamped calls named', () => {
  /** A completed call of `tool` with `input`, its output small. */
  const call = (callId: string, tool: string, input: Record<string, unknown>): ToolPart => ({
    ...toolPart(tool, 5, { callId, input, output: 'ok' }),
    tokens: count.input(input) + 5,
  });
  const edits = Array.from({ length: 40 }, (_, i) =>
    assistant([
      call(`e${i}`, 'Edit', { file_path: `/repo/src/f${i}.ts`, old_string: edit, new_string: edit }),
    ]),
  );
  const kept = conversation([user('go', 10), ...edits]);

  it('to markers: every path still there, within the limit', () => {
    // Every call at its marker with its path: about 2,330 tokens with the fixed 500.
    const limit = 2400;
    const fit = fitKeptMessages(kept, { fixedTokens: 500, targetTokens: 1000, limitTokens: limit, count });
    expect(fit.fits).toBe(true);
    expect(fit.tokensAfter).toBeLessThanOrEqual(limit);
    expect(fit.clamps).toHaveLength(40);
    fit.clamps.forEach((clamp, i) =>
      expect((clamp.part as ToolPart).input).toMatchObject({ file_path: `/repo/src/f${i}.ts` }),
    );
  });

  it('drops the paths only when the markers with them still exceed the limit', () => {
    // Below what every call at its marker with its path takes, above what bare markers take (1,940).
    const limit = 2100;
    const fit = fitKeptMessages(kept, { fixedTokens: 500, targetTokens: 1000, limitTokens: limit, count });
    expect(fit.fits).toBe(true);
    expect(fit.tokensAfter).toBeLessThanOrEqual(limit);
    const bare = fit.clamps.filter((clamp) => !('file_path' in ((clamp.part as ToolPart).input as object)));
    // The oldest lose them first; the newest still name their files.
    expect(bare.length).toBeGreaterThan(0);
    expect(bare.length).toBeLessThan(40);
    expect(bare[0]!.seq).toBe(fit.clamps[0]!.seq);
  });
});
