/**
 * A session's status at the package's boundary: the stored count, the estimate a usage report
 * calibrates (which may add, up to a quarter of the usable input, and never subtract), the
 * silent overflow, and that an append answers what `sessionStatus` reads next.
 */
import { describe, expect, it } from 'vitest';
import { getTokenizer } from '@compactor/tokenizer';
import { sessionStatus } from './status';
import { newSession, parsedMessages, useTestSessions } from './test-support/session-resources';

const t = useTestSessions();
const count = (text: string) => getTokenizer('o200k_base').countSync(text);

const say = (role: 'user' | 'assistant', text: string, usage?: Record<string, number>) => ({
  role,
  parts: [{ type: 'text', text }],
  ...(role === 'assistant' ? { finish: 'stop' } : {}),
  ...(usage ? { usage } : {}),
});
const append = (id: string, messages: unknown[]) =>
  t.messages.append({ tenantId: 'tenant-a', id }, parsedMessages(messages), t.log);

describe('the status an append answers', () => {
  it('is the stored count when no usage was reported', async () => {
    await newSession(t, 'tenant-a', 'st-stored');
    const { status } = await append('st-stored', [say('user', 'hi'), say('assistant', 'hello')]);
    expect(status).toMatchObject({
      tokens: count('hi') + count('hello'),
      estimate: 'stored',
      overflow: false,
    });
  });

  it('adds what a report saw beyond the stored messages, then what came after it', async () => {
    await newSession(t, 'tenant-a', 'st-hybrid', { model: { id: 'gpt-4o' } });
    const { status } = await append('st-hybrid', [
      say('user', 'hi'),
      say('assistant', 'hello', { input: 9_000, output: 50, cacheRead: 1_000 }),
      say('user', 'and now?'),
    ]);
    expect(status).toMatchObject({
      tokens: 9_000 + 1_000 + 50 + count('and now?'),
      estimate: 'hybrid',
      overflow: false,
    });
  });

  it('never goes below the stored count, and a report adds at most a quarter of the usable input', async () => {
    await newSession(t, 'tenant-a', 'st-bounds');
    const words = ' word'.repeat(2_000);
    const low = await append('st-bounds', [
      say('user', words),
      say('assistant', 'ok', { input: 1, output: 1 }),
    ]);
    const stored = count(words) + count('ok');
    expect(low.status.tokens).toBe(stored);

    const high = await append('st-bounds', [say('assistant', 'fine', { input: 6_900, output: 1 })]);
    // Usable 7,000: the report may add 1,750 over what is stored.
    expect(high.status.tokens).toBe(stored + count('fine') + 1_750);
    expect(high.status.calibrationTokens).toBe(1_750);
  });

  it('shows a silent overflow: a reported prompt above the window', async () => {
    await newSession(t, 'tenant-a', 'st-silent', { policy: { auto: false } });
    const { status } = await append('st-silent', [
      say('user', 'hi'),
      say('assistant', 'ok', { input: 9_000, output: 2 }),
    ]);
    expect(status).toMatchObject({ overflow: true, usable: 7_000, estimate: 'hybrid' });
  });

  it('is what sessionStatus reads next', async () => {
    const session = await newSession(t, 'tenant-a', 'st-next');
    const answered = await append('st-next', [
      say('user', 'one'),
      say('assistant', 'two', { input: 40, output: 2 }),
    ]);
    expect(await sessionStatus(t.database.db, session)).toEqual(answered.status);
  });
});
