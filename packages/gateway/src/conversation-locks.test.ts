/** KeyedSerializer: one task at a time per key, keys independent, a failed task releases its key. */
import { describe, expect, it } from 'vitest';
import { KeyedSerializer } from './conversation-locks';

/** A task that records its start and end and finishes when the test says so. */
function gated(log: string[], name: string) {
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let started!: () => void;
  const start = new Promise<void>((resolve) => (started = resolve));
  return {
    task: async () => {
      log.push(`${name} start`);
      started();
      await gate;
      log.push(`${name} end`);
      return name;
    },
    open,
    start,
  };
}

describe('KeyedSerializer', () => {
  it('runs tasks of one key in arrival order, one at a time, and other keys alongside', async () => {
    const serializer = new KeyedSerializer();
    const log: string[] = [];
    const a1 = gated(log, 'a1');
    const a2 = gated(log, 'a2');
    const b1 = gated(log, 'b1');
    const first = serializer.run('a', a1.task);
    const second = serializer.run('a', a2.task);
    const other = serializer.run('b', b1.task);
    await Promise.all([a1.start, b1.start]);
    expect(log).toEqual(['a1 start', 'b1 start']);
    b1.open();
    expect(await other).toBe('b1');
    a1.open();
    await a2.start;
    a2.open();
    expect(await Promise.all([first, second])).toEqual(['a1', 'a2']);
    expect(log).toEqual(['a1 start', 'b1 start', 'b1 end', 'a1 end', 'a2 start', 'a2 end']);
  });

  it('lets the next task of a key run after one fails', async () => {
    const serializer = new KeyedSerializer();
    const failed = serializer.run('k', () => Promise.reject(new Error('boom')));
    const next = serializer.run('k', () => Promise.resolve('ran'));
    await expect(failed).rejects.toThrow('boom');
    expect(await next).toBe('ran');
  });
});
