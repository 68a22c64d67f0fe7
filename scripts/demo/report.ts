/**
 * The demo's final report: each compaction's outcome and steps, the context now, the summary the
 * model sees, and the checks (valid OpenAI rendering, compactions, the next prompt fits, facts kept).
 */
import type { CompactorClient } from '@compactor/client';
import { validateContext } from '@compactor/core';
import { SESSION_FACTS } from '@compactor/testing/fixtures';
import type { DemoOptions } from './options';
import { bold, dim, duration, n, ok, preview, red, section, trimmedJson, yellow } from './print';

/** A step's detail on one line: `{ a: 1, b: { c: 'x' } }` → `a=1 b.c=x`, nulls and `false` left out. */
function flatten(value: unknown, prefix = ''): string {
  if (value === null || value === undefined || value === false) return '';
  if (typeof value !== 'object' || Array.isArray(value)) {
    return `${prefix}=${typeof value === 'string' ? value : JSON.stringify(value)}`;
  }
  const text = Object.entries(value)
    .map(([k, v]) => flatten(v, prefix ? `${prefix}.${k}` : k))
    .filter(Boolean)
    .join(' ');
  return prefix === '' && text.length > 110 ? `${text.slice(0, 109)}…` : text;
}

/**
 * Prints the report on the session's compactions (`compactionIds`) and its context; returns
 * whether every check passed.
 */
export async function printReport(
  client: CompactorClient,
  run: {
    apiUrl: string;
    sessionId: string;
    usable: number;
    compactionIds: Iterable<string>;
    options: DemoOptions;
  },
): Promise<boolean> {
  const { apiUrl, sessionId, usable, options } = run;
  const rows = await Promise.all([...run.compactionIds].map((id) => client.getCompaction(id)));
  let failures = 0;
  for (const row of rows) {
    section(`Compaction ${row.id}: ${row.reason}, ${row.strategy} → ${row.status}`);
    if (row.status !== 'completed') {
      // Skipped (nothing to compact) is an answer, not an error; failed is one.
      if (row.status !== 'skipped') failures++;
      const paint = row.status === 'skipped' ? yellow : red;
      console.log(`  ${paint(row.status)}: ${row.error?.code} (${row.error?.message})`);
    } else {
      // A completed compaction measured the view before and after.
      const smaller = Math.round((1 - row.tokensAfter! / row.tokensBefore!) * 100);
      console.log(
        `  tokens     ${bold(`${n(row.tokensBefore)} → ${n(row.tokensAfter)}`)} (${smaller} % smaller)`,
      );
      console.log(
        `  messages   ${row.messagesBefore} → ${row.messagesAfter}; verbatim from seq ${row.boundarySeq}`,
      );
      console.log(`  pruned     ${row.prunedParts} tool outputs, ${n(row.prunedTokens)} tokens`);
      console.log(
        `  summary    by ${row.model ?? 'the truncate fallback'}${row.usage ? `, ${n(row.usage.input)} in / ${n(row.usage.output)} out tokens` : ''}`,
      );
    }
    const { steps, ...fields } = row;
    console.log(
      `  took       ${duration(row.requestedAt, row.finishedAt)} from request to finish, ${row.attempts} attempt${row.attempts === 1 ? '' : 's'}`,
    );
    for (const s of steps) {
      console.log(
        `    ${s.step.padEnd(10)} #${s.attempt} ${s.status === 'completed' ? ok(true) : red(s.status)} ${duration(s.startedAt, s.finishedAt).padStart(7)}  ${dim(flatten(s.detail))}`,
      );
    }
    console.log(dim(`  GET /v1/compactions/${row.id} (steps above)`));
    console.log(dim(trimmedJson(fields)));
  }

  const context = await client.getContext(sessionId);
  const { status } = await client.getSession(sessionId);
  const { messages } = context;
  // Null for an unlimited window, which the demo's session does not have.
  const percent = status.percent ?? 0;
  section(
    `Context now: ${messages.length} messages, ${n(context.tokens)} tokens, next prompt ${Math.round(percent)} % of usable (GET …/context)`,
  );
  const head = 6;
  for (const m of messages.slice(0, head)) console.log(preview(m));
  if (messages.length > head)
    console.log(dim(`        … ${messages.length - head} more, up to seq ${messages.at(-1)!.seq}`));

  const summaryText = messages
    .filter((m) => m.summary && m.role === 'assistant')
    .map((m) => m.parts.map((p) => (p.type === 'text' ? p.text : '')).join(''))
    .join('\n');
  if (summaryText) {
    // Blank lines and sections with nothing in them left out, to fit a screen.
    const lines = summaryText.split('\n');
    const shown = lines.filter((line, i) => {
      if (line.trim() === '' || /^\s*-\s*\(none\)\s*$/.test(line)) return false;
      const next = lines.slice(i + 1).find((l) => l.trim() !== '');
      return !(line.startsWith('#') && (next === undefined || /^\s*-\s*\(none\)\s*$/.test(next)));
    });
    const limit = 30;
    section(`The summary the model sees (${lines.length} lines; blank and empty sections left out)`);
    for (const line of shown.slice(0, limit))
      console.log(`  ${line.length > 108 ? `${line.slice(0, 107)}…` : line}`);
    if (shown.length > limit) console.log(dim(`  … ${shown.length - limit} more lines`));
  }

  section('Checks');
  const openai = await client.getContext(sessionId, { format: 'openai' });
  const problems = validateContext(openai.messages);
  console.log(
    `  ${ok(problems.length === 0)} format=openai: ${openai.messages.length} Chat Completions messages, ` +
      (problems.length === 0
        ? 'valid (every tool result answers a call)'
        : red(`PROBLEMS: ${JSON.stringify(problems)}`)),
  );
  const completed = rows.filter((r) => r.status === 'completed').length;
  const counts = ['completed', 'skipped', 'failed', 'pending', 'running']
    .map((state) => [state, rows.filter((r) => r.status === state).length] as const)
    .filter(([, count]) => count > 0)
    .map(([state, count]) => `${count} ${state}`);
  console.log(
    `  ${ok(completed > 0 && failures === 0)} compaction${rows.length === 1 ? '' : 's'}: ${counts.join(', ')}`,
  );
  console.log(
    `  ${ok(percent < 100)} the next prompt fits: ${n(status.tokens)} of ${n(usable)} usable tokens`,
  );
  let factsMissing = 0;
  if (options.builtIn) {
    const verbatim = messages
      .filter((m) => !m.summary)
      .flatMap((m) =>
        m.parts.map((p) => (p.type === 'text' ? p.text : p.type === 'tool' ? JSON.stringify(p.input) : '')),
      )
      .join('\n');
    const where = (fact: string) =>
      summaryText.includes(fact) ? 'in the summary' : verbatim.includes(fact) ? 'kept verbatim' : null;
    const facts: [string, string][] = [
      ['goal', SESSION_FACTS.goal],
      ...SESSION_FACTS.constraints.map((c): [string, string] => ['constraint', c]),
      ...SESSION_FACTS.files.map((f): [string, string] => ['file', f]),
    ];
    for (const [kind, fact] of facts) {
      const found = where(fact);
      if (!found) factsMissing++;
      console.log(
        `  ${ok(found !== null)} ${kind.padEnd(10)} ${fact.length > 60 ? `${fact.slice(0, 59)}…` : fact}  ${found ? dim(found) : red('LOST')}`,
      );
    }
  }
  console.log(dim(`  the raw history keeps every message: GET ${apiUrl}/v1/sessions/${sessionId}/messages`));
  return !(problems.length > 0 || failures > 0 || completed === 0 || factsMissing > 0);
}
