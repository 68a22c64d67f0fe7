import { beforeAll, describe, expect, it } from 'vitest';
import { useTestApi } from '../test-support/api';
import { newSession } from '../test-support/helpers';
import { capturedLogger } from '../test-support/log-capture';

/** Every line the server logs, as written. */
const { logger, lines } = capturedLogger();

const api = useTestApi({ server: { logger } });

const SECRET = 'the-customer-secret-4f1c';

beforeAll(async () => {
  // This file's database only: an insert of a part fails inside Postgres, after the driver has
  // the statement and its parameters (the part's text) in hand.
  await api.database.database.pool.query(`
    create function refuse_part() returns trigger language plpgsql as $$
    begin raise exception 'refused by the test trigger'; end $$;
    create trigger refuse_part before insert on parts for each row execute function refuse_part();
  `);
});

describe('the log of a failed request', () => {
  it('names the failure (code and safe message) and carries no message text', async () => {
    await newSession(api, 'logs');
    const response = await api.request({
      method: 'POST',
      url: '/v1/sessions/logs/messages',
      payload: {
        messages: [{ role: 'user', parts: [{ type: 'text', text: `please keep ${SECRET} safe` }] }],
      },
    });
    expect(response.statusCode).toBe(500);
    expect(response.body).not.toContain(SECRET);
    const failed = lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .find((l) => l.msg === 'request failed');
    expect(failed?.err).toMatchObject({ code: 'P0001', message: 'refused by the test trigger' });
    // Whose request it was and which session it names, on the failure and on the completion line.
    expect(failed).toMatchObject({ tenantId: 'tenant-a', sessionId: 'logs' });
    const completed = lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((l) => l.msg === 'request completed' && l.sessionId === 'logs');
    expect(completed.map((l) => (l.res as { statusCode: number }).statusCode)).toEqual([500]);
    expect(lines.join('\n')).not.toContain(SECRET);
    // Nothing was written: the append is one transaction.
    const stored = await api.request({ method: 'GET', url: '/v1/sessions/logs/messages' });
    expect(stored.json().messages).toHaveLength(0);
  });
});
