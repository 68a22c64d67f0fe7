/**
 * Where a preset's trigger departs from its reference's formula on purpose, or counts only part of
 * the prompt (docs/PRESETS.md): OpenCode's sum against the preset's estimate, and a tokens trigger
 * that measures history without pinned system messages.
 */
import { describe, expect, it } from 'vitest';
import type { Message } from './model';
import { POLICY_PRESETS } from './policy';
import { assistant, conversation, model, system, usage, user } from './test-support/builders';
import { evaluateTrigger, isOverflow } from './triggers';

const opencode = POLICY_PRESETS.opencode;
const gpt4o = model(128_000, 16_384);
const claude = model(200_000, 64_000);

describe("the opencode preset's trigger: OpenCode's sum, plus the prompt tokens it leaves out (docs/PRESETS.md)", () => {
  // gpt-4o: usable 128,000 − 16,384 = 111,616. The stored history is one the reports can be
  // of: a report adds at most a quarter of the usable input (27,904) over the stored count.
  const answered = (report: ReturnType<typeof usage>, after: Message[] = []) =>
    conversation([user('the task', 95_000), assistant('done', { tokens: 1000, usage: report }), ...after]);

  it("counts cache writes, which OpenCode's input + cache.read + output leaves out", () => {
    const report = usage(100_000, 1000, { cacheWrite: 20_000 });
    expect(isOverflow(report, gpt4o, opencode)).toBe(false);
    expect(evaluateTrigger({ messages: answered(report), model: gpt4o, policy: opencode })).toMatchObject({
      compact: true,
      reason: 'threshold',
      tokens: 121_000,
    });
  });

  it('counts what was appended after the last usage report (the next prompt holds it too)', () => {
    const report = usage(100_000, 1000);
    expect(isOverflow(report, gpt4o, opencode)).toBe(false);
    const messages = answered(report, [user('a pasted log', 20_000)]);
    expect(evaluateTrigger({ messages, model: gpt4o, policy: opencode })).toMatchObject({
      compact: true,
      reason: 'threshold',
      tokens: 121_000,
    });
  });

  it('agrees with OpenCode when the report is the whole story', () => {
    const under = usage(100_000, 1000, { cacheRead: 10_616 });
    const over = usage(100_000, 1000, { cacheRead: 10_617 });
    for (const [report, expected] of [
      [under, false],
      [over, true],
    ] as const) {
      expect(isOverflow(report, gpt4o, opencode)).toBe(expected);
      expect(evaluateTrigger({ messages: answered(report), model: gpt4o, policy: opencode }).compact).toBe(
        expected,
      );
    }
  });
});

describe('a tokens trigger counts history, not pinned system messages (topic preset, 6,000)', () => {
  // A 5,500-token system prompt, then 600 tokens of conversation: 6,100 in the view, 600 history.
  const view = conversation([
    system('You are a careful assistant.', 5500),
    user('hi', 300),
    assistant('hello', { tokens: 300 }),
  ]);
  const check = (pinSystemMessages: boolean, messages = view) =>
    evaluateTrigger({ messages, model: claude, policy: POLICY_PRESETS.topic, pinSystemMessages });

  it.each<[string, boolean, Message[], boolean]>([
    ['pinned: 600 of history does not fire', true, view, false],
    ['pinned: 6,001 of history fires', true, [...view, user('a long paste', 5401)], true],
    ['not pinned: the system prompt is history, 6,100 fires', false, view, true],
  ])('%s', (_name, pinned, messages, fires) => {
    expect(check(pinned, conversation(messages)).compact).toBe(fires);
  });

  it('other triggers measure the whole prompt, pinned messages included', () => {
    // OpenCode's usable on a 6,500-token window with a 100-token output limit: 6,400.
    const small = model(6500, 100);
    const messages = conversation([system('rules', 5500), user('hi', 1000)]);
    expect(
      evaluateTrigger({ messages, model: small, policy: POLICY_PRESETS.opencode, pinSystemMessages: true }),
    ).toMatchObject({ compact: true, tokens: 6500 });
  });
});
