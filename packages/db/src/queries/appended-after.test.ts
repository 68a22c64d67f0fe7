/** appendedAfter: what arrived after a seq, summaries excluded, as the view counts it. */
import { describe, expect, it } from 'vitest';
import { INTERRUPTED_TOOL_RESULT_TOKENS } from '@compactor/core';
import { appendTestMessages } from '../test-support/append-test-messages';
import { createTestSession, newMessage, text, tool } from '../test-support/fixtures';
import { appendedAfter } from './appended-after';
import { useTestDatabase } from '../test-support/test-database';

const t = useTestDatabase();

describe('appendedAfter', () => {
  it('sums the stored tokens after the seq, an unfinished call with its interrupted result, no summaries', async () => {
    const session = await createTestSession(t.db);
    await appendTestMessages(t.db, session.pk, [
      newMessage('user', [text('covered', 100)]),
      newMessage('user', [text('arrived meanwhile', 40)]),
      newMessage('assistant', [tool('call_1', null, { status: 'running', tokens: 7 })]),
      newMessage('assistant', [text('summary', 500)], { summary: true }),
    ]);
    expect(await appendedAfter(t.db, session.pk, 1)).toEqual({
      newestSeq: 3,
      tokens: 40 + 7 + INTERRUPTED_TOOL_RESULT_TOKENS,
    });
    expect(await appendedAfter(t.db, session.pk, 3)).toEqual({ newestSeq: null, tokens: 0 });
    expect(await appendedAfter(t.db, session.pk, 0)).toMatchObject({ newestSeq: 3 });
  });
});
