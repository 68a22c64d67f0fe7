import { describe, expect, it } from 'vitest';
import { PlacementError, runStamp, scratchPlacement } from './scratch-placement';

const defaults = { database: 'compactor_demo', queuePrefix: '{compactor-demo}' };
const names = { database: '--database', queuePrefix: '--queue-prefix' };
const url = 'postgres://postgres@127.0.0.1:5432/compactor';

describe('scratchPlacement', () => {
  it("takes the chosen names, kept after the run; else names of the run's own, to drop when it ends", () => {
    const stamp = '20261207103000_0f3a';
    expect(scratchPlacement({}, defaults, url, names, stamp)).toEqual({
      database: 'compactor_demo_20261207103000_0f3a',
      queuePrefix: '{compactor-demo-20261207103000-0f3a}',
      perRun: { database: true, queuePrefix: true },
    });
    expect(scratchPlacement({ database: 'demo_2', queuePrefix: '{demo-2}' }, defaults, url, names)).toEqual({
      database: 'demo_2',
      queuePrefix: '{demo-2}',
      perRun: { database: false, queuePrefix: false },
    });
    expect(scratchPlacement({ database: 'demo_2' }, defaults, url, names, stamp).perRun).toEqual({
      database: false,
      queuePrefix: true,
    });
  });

  it('names two runs apart, within the identifier limit', () => {
    const first = scratchPlacement({}, defaults, url, names);
    const second = scratchPlacement({}, defaults, url, names);
    expect(first.database).not.toBe(second.database);
    expect(first.database).toMatch(/^compactor_demo_\d{14}_[0-9a-f]{4}$/);
    expect(runStamp(new Date('2026-12-07T10:30:00Z'), () => 0.5)).toBe('20261207103000_8000');
  });

  it.each([
    ['Compactor', 'lower-case name'],
    ['a-b', 'lower-case name'],
    ['x'.repeat(64), 'lower-case name'],
    ['db;drop', 'lower-case name'],
    ['', 'lower-case name'],
    ['d\u0000', 'lower-case name'],
    ['postgres', "server's own database"],
    ['template1', "server's own database"],
    ['compactor', 'DATABASE_URL names'],
  ])('refuses the database %j', (database, message) => {
    expect(() => scratchPlacement({ database }, defaults, url, names)).toThrow(PlacementError);
    expect(() => scratchPlacement({ database }, defaults, url, names)).toThrow(message);
  });

  it('refuses the database DATABASE_URL names however it is spelled there', () => {
    expect(() =>
      scratchPlacement(
        { database: 'my_data' },
        defaults,
        'postgres://u:p@db.example:5432/my%5Fdata?sslmode=require',
        names,
      ),
    ).toThrow('DATABASE_URL names');
  });

  it.each(['', 'a b', 'p*', 'p?', '[x]', 'x'.repeat(101), 'é'])(
    'refuses the queue prefix %j',
    (queuePrefix) => {
      expect(() => scratchPlacement({ queuePrefix }, defaults, url, names)).toThrow('--queue-prefix');
    },
  );
});
