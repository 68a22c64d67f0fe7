/**
 * Output helpers: section rules, progress lines stamped with the time since start, message
 * previews. Colour only on a terminal (and never with NO_COLOR), so a log stays plain text.
 */
import type { Message, Policy } from '@compactor/core';

const color = Boolean(process.stdout.isTTY) && process.env.NO_COLOR === undefined;
const paint = (code: string) => (s: string) => (color ? `\x1b[${code}m${s}\x1b[0m` : s);
export const bold = paint('1');
export const dim = paint('2');
export const green = paint('32');
export const red = paint('31');
export const yellow = paint('33');
export const cyan = paint('36');

const started = Date.now();
const WIDTH = 92;

/** Seconds since the demo started, as a fixed-width stamp. */
export const stamp = () => dim(`${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s`);

/** A section rule: `── Title ─────…`. */
export function section(title: string): void {
  console.log(`\n${bold(`── ${title} `.padEnd(WIDTH, '─'))}`);
}

/** A progress line, stamped. */
export function progress(text: string): void {
  console.log(`${stamp()}  ${text}`);
}

export const n = (value: number | null | undefined) => (value ?? 0).toLocaleString('en-US');
export const ok = (good: boolean) => (good ? green('✓') : red('✗'));

/** A usage bar of `width` cells for a percentage (100 % fills it; over 100 % is marked). */
export function bar(percent: number, width = 16): string {
  const cells = Math.max(0, Math.min(width, Math.round((percent / 100) * width)));
  const text = '█'.repeat(cells) + '·'.repeat(width - cells);
  return percent >= 100 ? red(text) : percent >= 85 ? yellow(text) : text;
}

/** One line per message: seq, role, a summary flag, and its text or tool calls, cut to `width`. */
export function preview(message: Message, width = 64): string {
  const text = message.parts
    .map((p) =>
      p.type === 'text'
        ? p.text
        : p.type === 'tool'
          ? `[${p.tool} → ${(p.output ?? p.error ?? '').length.toLocaleString('en-US')} chars${p.compactedAt ? ', pruned' : ''}]`
          : `[${p.type}]`,
    )
    .join(' ')
    .replace(/\s+/g, ' ')
    .trim();
  const role = `${message.role}${message.summary ? ' (summary)' : ''}`.padEnd(20);
  return `  ${String(message.seq).padStart(4)}  ${role}${text.slice(0, width)}${text.length > width ? '…' : ''}`;
}

/** Milliseconds between two ISO timestamps, readable. */
export function duration(from: string | null, to: string | null): string {
  if (!from || !to) return '?';
  const ms = Date.parse(to) - Date.parse(from);
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/**
 * A JSON value for reading: nulls dropped, long strings and arrays cut, one key per line,
 * indented by `indent`.
 */
export function trimmedJson(value: unknown, indent = '  '): string {
  const trim = (v: unknown): unknown => {
    if (typeof v === 'string') return v.length > 72 ? `${v.slice(0, 71)}…` : v;
    if (Array.isArray(v)) {
      const kept = v.slice(0, 3).map(trim);
      return v.length > 3 ? [...kept, `… ${v.length - 3} more`] : kept;
    }
    if (v && typeof v === 'object') {
      return Object.fromEntries(
        Object.entries(v)
          .filter(([, x]) => x !== null)
          .map(([k, x]) => [k, trim(x)]),
      );
    }
    return v;
  };
  return JSON.stringify(trim(value), null, 2)
    .split('\n')
    .map((line) => indent + line)
    .join('\n');
}

/** Dotted paths of an object's leaves: `{ pruning: { protectTokens: 1 } }` → `pruning.protectTokens`. */
function leafPaths(value: unknown, prefix = ''): string[] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return prefix ? [prefix] : [];
  return Object.entries(value).flatMap(([key, child]) => leafPaths(child, prefix ? `${prefix}.${key}` : key));
}

/**
 * The session's policy as the API resolved it (`effectivePolicy`), with the overrides the demo
 * sent named: what the output claims is what runs.
 */
export function describePolicy(sent: Record<string, unknown>, effective: Policy): string[] {
  const overrides = leafPaths(sent).filter((path) => path !== 'preset');
  const { trigger, pruning } = effective;
  const when =
    trigger.kind === 'ratio'
      ? `at ${Math.round(trigger.ratio * 100)} % of the window`
      : trigger.kind === 'tokens'
        ? `at ${n(trigger.tokens)} tokens`
        : trigger.kind === 'reserve'
          ? 'when less than its reserve is left for the reply'
          : 'when the next prompt would not fit';
  return [
    `  policy  ${effective.preset} preset${overrides.length ? ` with ${overrides.join(', ')} overridden` : ''} (resolved by the API)`,
    effective.prune
      ? `          prune old tool outputs after each finished turn (the newest ${n(pruning.protectTokens)} tokens of them kept, at least ${n(pruning.minimumTokens)} cleared at a time),`
      : '          no pruning after turns,',
    effective.auto
      ? `          ${effective.strategy} automatically ${when}`
      : `          no automatic compaction (strategy ${effective.strategy} on request)`,
  ];
}
