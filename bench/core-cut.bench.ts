/**
 * Cut point and compaction plan over 100,000 messages (`npm run bench -- core-cut`).
 *
 * `findCutPoint` / `planCompaction` sum stored per-part counts from the end and check call/result
 * pairs with one pass over the tool parts. The baseline, in the same process and on the same
 * session, is Opal's approach: re-estimate every message from its text (`length / 4`) while
 * walking back, then check the pairs by slicing the history at the cut and collecting its
 * unfinished calls. Budget: well under 50 ms.
 */
import {
  DEFAULT_POLICY,
  estimateTokens,
  findCutPoint,
  isTurnStart,
  planCompaction,
  type Message,
  type Part,
} from '@compactor/core';
import { text, toolPart } from '@compactor/core/testing';
import { lcg, measure, storedMessage, timingRow, type Timing } from './harness';

const MESSAGES = 100_000;
const BUDGET_MS = 50;

/** Turns of one user message and 1–6 assistant messages, each with text and 0–2 tool calls. */
function buildSession(): Message[] {
  const random = lcg(7);
  const corpus = 'Reading the parser; the failing test expects a trailing comma to be accepted.\n'.repeat(60);
  const messages: Message[] = [];
  let seq = 0;
  while (messages.length < MESSAGES) {
    const question = corpus.slice(0, 40 + Math.floor(random() * 200));
    messages.push(storedMessage(++seq, 'user', [text(question)]));
    const steps = 1 + Math.floor(random() * 6);
    for (let step = 0; step < steps && messages.length < MESSAGES; step++) {
      const thought = corpus.slice(0, 20 + Math.floor(random() * 300));
      const parts: Part[] = [text(thought)];
      const calls = Math.floor(random() * 3);
      for (let call = 0; call < calls; call++) {
        const output = corpus.slice(0, 100 + Math.floor(random() * 3000));
        const input = { path: `src/module${call}.ts` };
        parts.push(
          toolPart('read', estimateTokens(output), {
            callId: `call_${seq + 1}_${call}`,
            input,
            output,
            // Stored counts equal what the baseline re-estimates, so both must find the same cut.
            tokens: estimateTokens(JSON.stringify(input) + output),
          }),
        );
      }
      messages.push(storedMessage(++seq, 'assistant', parts));
    }
  }
  return messages;
}

/** Opal's find_cut_point with re-estimated sizes, plus a straightforward call/result check. */
function naiveCut(messages: readonly Message[], keepRecentTokens: number): number | null {
  const size = (m: Message): number =>
    m.parts.reduce(
      (sum, p) =>
        sum +
        estimateTokens(
          p.type === 'tool' ? JSON.stringify(p.input) + (p.output ?? '') : 'text' in p ? p.text : '',
        ),
      0,
    );
  let accumulated = 0;
  let point = -1;
  for (let i = messages.length - 1; i >= 0 && point === -1; i--) {
    accumulated += size(messages[i]!);
    if (accumulated >= keepRecentTokens) point = i;
  }
  if (point === -1) return null;
  for (let cut = point; cut < messages.length; cut++) {
    if (!isTurnStart(messages[cut]!)) continue;
    const before = new Set<string>();
    for (const m of messages.slice(0, cut))
      for (const p of m.parts) if (p.type === 'tool') before.add(p.callId);
    const orphans = messages
      .slice(cut)
      .some((m) => m.parts.some((p) => p.type === 'tool' && before.has(p.callId)));
    if (!orphans) return cut > 0 ? cut : null;
  }
  return null;
}

const session = buildSession();
const totalTokens = session.reduce((sum, m) => sum + m.parts.reduce((s, p) => s + p.tokens, 0), 0);
console.log(`session: ${session.length} messages, ${totalTokens} stored tokens`);

const row = (name: string, r: Timing): string => timingRow(name, r, 8);

let worstP95 = 0;
for (const [scenario, keepRecentTokens] of [
  ['auto on a 200k window (keep window / 4 = 50,000)', 50_000],
  ['auto on a 1M window (keep 250,000)', 250_000],
  ['worst case: keep half the session', Math.floor(totalTokens / 2)],
] as const) {
  const cut = findCutPoint(session, { keepRecentTokens });
  const naive = naiveCut(session, keepRecentTokens);
  if (cut?.index !== naive) throw new Error(`baseline disagrees: ${cut?.index} vs ${naive}`);
  console.log(`\n${scenario}: cut at message ${cut?.index}, keeping ${cut?.keptTokens} tokens`);
  const fast = measure(50, () => findCutPoint(session, { keepRecentTokens }));
  const planned = measure(50, () => planCompaction(session, { keepRecentTokens, policy: DEFAULT_POLICY }));
  const slow = measure(10, () => naiveCut(session, keepRecentTokens));
  console.log(row('findCutPoint (stored counts)', fast));
  console.log(row('planCompaction (cut + split turn + slices)', planned));
  console.log(row('Opal-style: re-estimate every message', slow));
  console.log(`baseline / findCutPoint: ${(slow.median / fast.median).toFixed(1)}x`);
  worstP95 = Math.max(worstP95, fast.p95, planned.p95);
}
console.log(
  `\nbudget ${BUDGET_MS} ms: ${worstP95 < BUDGET_MS ? 'ok' : 'EXCEEDED'} (worst p95 ${worstP95.toFixed(2)} ms)`,
);
if (worstP95 >= BUDGET_MS) process.exit(1);
