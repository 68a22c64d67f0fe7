import { describe, expect, it } from 'vitest';
import { validateContext } from './context-validation';
import type { FitCounters } from './fit';
import type { Message, ToolPart } from './model';
import { prunedOutputMarker } from './model';
import { toOpenAIMessages } from './openai-format';
import { fitViewForRead, type ReadFitOptions } from './read-fit';
import { READ_FIT_MARKER_METADATA_TYPE, readFitMarkerLine } from './read-fit-marker';
import { assistant, conversation, summary, system, toolPart, user } from './test-support/builders';
import { estimateTokens, prunedOutputMarkerTokens, storedTokens } from './tokens';

// A deterministic stand-in for the tokenizer: four characters a token, as core's estimate.
const count: FitCounters = {
  text: (value) => estimateTokens(value),
  input: (input) => estimateTokens(JSON.stringify(input)),
};

const options = (budgetTokens: number, extras: Partial<ReadFitOptions> = {}): ReadFitOptions => ({
  budgetTokens,
  pruning: null,
  pinSystemMessages: true,
  markerBudgetTokens: 400,
  at: '2026-01-01T00:00:00.000Z',
  count,
  ...extras,
});

/** A text of exactly `tokens` tokens by `count` (four characters each). */
const words = (label: string, tokens: number) => `${label} `.padEnd(tokens * 4, 'x');
/** A completed tool call whose output is `outputTokens` tokens; the part costs 10 more (name and arguments). */
const call = (outputTokens: number): ToolPart =>
  toolPart('bash', outputTokens, { output: words('log', outputTokens), input: { cmd: 'ls' } });

const textOf = (messages: readonly Message[]) =>
  messages.flatMap((m) => m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : []))).join('\n');

describe('fitViewForRead', () => {
  it('serves a view that fits untouched', () => {
    const view = conversation([user(words('u', 40)), assistant(words('a', 60))]);
    const fit = fitViewForRead(view, options(100));
    expect(fit).toMatchObject({
      tokens: 100,
      fits: true,
      pinnedOver: false,
      cleared: 0,
      clamped: 0,
      dropped: 0,
    });
    expect(fit.messages).toEqual(view);
  });

  it('clears the outputs the prune selection picks, oldest first, only until the view fits', () => {
    // 10 + 310 + 310 + 10 + 10 = 650 tokens; the selection (protect 100) picks both outputs.
    const view = conversation([
      user(words('u', 10)),
      assistant([call(300)]),
      assistant([call(300)]),
      user(words('u', 10)),
      assistant(words('a', 10)),
    ]);
    const pruning = { protectTokens: 100, minimumTokens: 0, protectedTools: [], protectUserTurns: 0 };
    const fit = fitViewForRead(view, options(400, { pruning }));
    // The older output alone brings it to 650 − 300 + marker ≤ 400: the newer one stays.
    const marker = prunedOutputMarkerTokens('call_2_0');
    expect(fit).toMatchObject({ tokens: 350 + marker, fits: true, cleared: 1, clamped: 0, dropped: 0 });
    const [older, newer] = [fit.messages[1]!.parts[0] as ToolPart, fit.messages[2]!.parts[0] as ToolPart];
    expect(older.output).toBe(prunedOutputMarker('call_2_0'));
    expect(older.compactedAt).toBe('2026-01-01T00:00:00.000Z');
    expect(newer.output).toBe(
      view[2]!.parts[0]!.type === 'tool' ? (view[2]!.parts[0] as ToolPart).output : null,
    );
  });

  it('clamps an oversized part to what the budget needs, before dropping anything', () => {
    // 10 + 510 + 10 + 10 = 540 against 400: 140 over; the part (510 > a quarter of 400) goes to ≤ 370.
    const view = conversation([
      user(words('u', 10)),
      assistant([call(500)]),
      user(words('u', 10)),
      assistant(words('a', 10)),
    ]);
    const fit = fitViewForRead(view, options(400));
    expect(fit).toMatchObject({ fits: true, cleared: 0, clamped: 1, dropped: 0 });
    expect(fit.tokens).toBeLessThanOrEqual(400);
    expect(fit.tokens).toBeGreaterThan(380);
    const part = fit.messages[1]!.parts[0] as ToolPart;
    expect(part.output).toContain('tool output clamped to fit the context window');
    expect(part.output).toContain('call call_2_0');
    expect(fit.messages.map((m) => m.id)).toEqual(view.map((m) => m.id));
  });

  const goal = 'Build the invoice exporter. Never touch the production database.';
  /** The goal, then `turns` turns of a request, a tool step (100 + 10) and an answer (50). */
  function agentSession(turns: number): Message[] {
    const messages: Message[] = [system(words('sys', 20)), user(goal, 50)];
    for (let n = 1; n <= turns; n++) {
      const constraint = n === 2 ? ' The export must stream rows.' : '';
      if (n > 1) messages.push(user(`Request ${n}: add the next column.${constraint}`, 50));
      messages.push(assistant([call(100)]), assistant(words(`answer ${n}`, 50)));
    }
    return conversation(messages);
  }

  it('drops the oldest turns behind one marker that counts them and pins the goal, constraint and latest request', () => {
    // 20 + 6 turns × 210 = 1,280 tokens; budget 700 (cap 170: nothing oversized). With a marker
    // of about 110 tokens, the fewest messages are three turns, turn 4's request and its tool step
    // (20 + 110 + 50 + 210 × 2 = 600); the cut then moves to turn 5's request: 12 messages go.
    const view = agentSession(6);
    const fit = fitViewForRead(view, options(700));
    expect(fit.fits).toBe(true);
    expect(fit.tokens).toBeLessThanOrEqual(700);
    expect(fit.tokens).toBe(storedTokens(fit.messages));
    const [pinned, marker, firstKept] = fit.messages;
    expect(pinned!.role).toBe('system');
    expect(marker!.metadata).toEqual({ type: READ_FIT_MARKER_METADATA_TYPE, messagesOmitted: fit.dropped });
    // Whole turns go: the kept part starts at a request, and the marker stands for all before it.
    expect(firstKept!.role).toBe('user');
    expect(fit.dropped).toBe(view.indexOf(view.find((m) => m.id === firstKept!.id)!) - 1);
    expect(fit.dropped).toBe(12);
    const markerText = textOf([marker!]);
    expect(fit.tokens).toBe(20 + estimateTokens(markerText) + 2 * 210);
    expect(markerText).toContain(readFitMarkerLine(fit.dropped));
    expect(markerText).toContain(`${fit.dropped} earlier messages`);
    expect(markerText).toContain('recall tool finds them by words');
    expect(markerText).toContain('Goal: Build the invoice exporter. Never touch the production database.');
    expect(markerText).toContain('Constraint: The export must stream rows.');
    // The newest messages are kept as they were, the latest request among them.
    expect(fit.messages.at(-1)).toEqual(view.at(-1));
    expect(textOf(fit.messages)).toContain('Request 6: add the next column.');
    expect(validateContext(fit.messages)).toEqual([]);
    expect(validateContext(toOpenAIMessages({ ...fitLike(fit.messages) }))).toEqual([]);
  });

  it('pins the latest request in the marker when the cut falls inside the newest turn', () => {
    // One request and twelve tool steps (110 each): nothing but the newest turn to cut into.
    const messages: Message[] = [user(goal, 50)];
    for (let n = 0; n < 12; n++) messages.push(assistant([call(100)]));
    const view = conversation(messages);
    const fit = fitViewForRead(view, options(600));
    expect(fit.fits).toBe(true);
    expect(fit.dropped).toBeGreaterThan(0);
    expect(fit.messages[0]!.metadata['type']).toBe(READ_FIT_MARKER_METADATA_TYPE);
    // The only request is the goal and the latest request both: one line says so.
    expect(textOf(fit.messages)).toContain('Goal and latest request: Build the invoice exporter.');
    expect(fit.messages.at(-1)).toEqual(view.at(-1));
    expect(validateContext(fit.messages)).toEqual([]);
  });

  it('keeps the summary messages and carries the goal from their pinned section', () => {
    const previous = summary(
      "Earlier work.\n\n<pinned>\nThe user's own words, kept verbatim across compactions:\n- Goal: Ship the exporter.\n</pinned>",
      60,
    );
    const view = conversation([previous, ...agentSession(4).slice(2)], 1);
    const fit = fitViewForRead(view, options(500));
    expect(fit.fits).toBe(true);
    expect(fit.messages[0]).toEqual(view[0]);
    expect(textOf(fit.messages.slice(1, 2))).toContain('Goal: Ship the exporter.');
  });

  it('clamps the newest turn down to the budget when it alone does not fit', () => {
    // The request and one step of 2,000 tokens of output against 300: dropping cannot help.
    const view = conversation([user(goal, 50), assistant([call(2_000)])]);
    const fit = fitViewForRead(view, options(300));
    expect(fit).toMatchObject({ fits: true, dropped: 0 });
    expect(fit.clamped).toBeGreaterThan(0);
    expect(fit.tokens).toBeLessThanOrEqual(300);
    expect(textOf(fit.messages)).toContain(goal);
  });

  it('reports pinned system messages over the budget, and serves the best it can', () => {
    const view = conversation([system(words('sys', 500)), user(goal, 50), assistant(words('a', 50))]);
    const fit = fitViewForRead(view, options(400));
    expect(fit).toMatchObject({ fits: false, pinnedOver: true });
    expect(fit.messages[0]).toEqual(view[0]);
  });

  it('is deterministic: the same view gives the same answer', () => {
    const view = agentSession(6);
    expect(fitViewForRead(view, options(700))).toEqual(fitViewForRead(view, options(700)));
  });

  it('never clamps or drops a pinned system message among the kept ones', () => {
    const view = agentSession(5);
    const late = conversation([system(words('late rule', 30))], 100)[0]!;
    const withLate = [...view.slice(0, 4), late, ...view.slice(4)];
    const fit = fitViewForRead(withLate, options(600));
    expect(fit.fits).toBe(true);
    expect(fit.messages).toContainEqual(late);
  });
});

/** The shape toOpenAIMessages reads. */
function fitLike(messages: Message[]) {
  return { messages, compactionId: null, boundarySeq: null, tokens: storedTokens(messages) };
}
