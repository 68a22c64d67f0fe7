import { describe, expect, it } from 'vitest';
import { WorkGate, type GatePlace } from './work-gate';

/** Lets every settled promise's callbacks run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** A promise with its resolve exposed, for waits the test ends. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

describe('WorkGate', () => {
  it('admits as many as it has places, then the rest in arrival order', async () => {
    const gate = new WorkGate(2);
    const admitted: string[] = [];
    const places = new Map<string, GatePlace>();
    for (const name of ['a', 'b', 'c', 'd', 'e'])
      void gate.enter().then((place) => {
        admitted.push(name);
        places.set(name, place);
      });
    await settle();
    expect(admitted).toEqual(['a', 'b']);
    expect(gate.queued).toBe(3);
    places.get('b')!.leave();
    await settle();
    expect(admitted).toEqual(['a', 'b', 'c']);
    places.get('a')!.leave();
    places.get('c')!.leave();
    await settle();
    expect(admitted).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(gate.queued).toBe(0);
  });

  it('frees the place while a job waits outside, and takes it back behind those who queued meanwhile', async () => {
    const gate = new WorkGate(1);
    const order: string[] = [];
    const first = await gate.enter();
    const llm = deferred<string>();
    const outside = first.outside(async () => {
      order.push('first calls the LLM');
      return llm.promise;
    });
    const second = gate.enter().then((place) => {
      order.push('second admitted');
      return place;
    });
    await settle();
    expect(order).toEqual(['first calls the LLM', 'second admitted']);
    llm.resolve('summary');
    await settle();
    // The answer is in, but the place is the second job's until it leaves.
    let back = false;
    void outside.then(() => (back = true));
    await settle();
    expect(back).toBe(false);
    (await second).leave();
    await expect(outside).resolves.toBe('summary');
    first.leave();
    expect(gate.queued).toBe(0);
  });

  it("gives the place up once for a job's concurrent waits, and takes it once", async () => {
    const gate = new WorkGate(1);
    const place = await gate.enter();
    const a = deferred();
    const b = deferred();
    const both = Promise.all([place.outside(() => a.promise), place.outside(() => b.promise)]);
    // Two others can be admitted one after the other while the waits last: one place was freed, not two.
    const others: GatePlace[] = [];
    void gate.enter().then((p) => others.push(p));
    void gate.enter().then((p) => others.push(p));
    await settle();
    expect(others).toHaveLength(1);
    a.resolve();
    await settle();
    // One wait ended: the job is still outside, so it has not queued for its place yet.
    expect(gate.queued).toBe(1);
    others[0]!.leave();
    await settle();
    expect(others).toHaveLength(2);
    b.resolve();
    await settle();
    expect(gate.queued).toBe(1); // the job, behind the second other
    others[1]!.leave();
    await both;
    place.leave();
    const last = await gate.enter();
    last.leave();
  });

  it('a wait given up by its signal takes no place and leaves the queue', async () => {
    const gate = new WorkGate(1);
    const holder = await gate.enter();
    const controller = new AbortController();
    const abandoned = gate.enter(controller.signal);
    const next = gate.enter();
    await settle();
    expect(gate.queued).toBe(2);
    controller.abort('shutdown');
    // An AbortError, whatever the reason given: the workflow treats it as a cancellation.
    await expect(abandoned).rejects.toMatchObject({ name: 'AbortError', message: 'shutdown' });
    expect(gate.queued).toBe(1);
    holder.leave();
    const place = await next;
    place.leave();
    await expect(gate.enter(controller.signal)).rejects.toThrow('shutdown');
    (await gate.enter()).leave();
  });

  it('a wait that starts while the place is being taken back gives away nothing it does not hold', async () => {
    const gate = new WorkGate(1);
    const job = await gate.enter();
    const first = deferred();
    const firstWait = job.outside(() => first.promise);
    const other = await gate.enter(); // the freed place
    first.resolve();
    await settle(); // the job now queues to take its place back
    expect(gate.queued).toBe(1);
    const second = deferred();
    const secondWait = job.outside(() => second.promise);
    let firstBack = false;
    void firstWait.then(() => (firstBack = true));
    await settle();
    // The job is not back in while the other job holds the one place.
    expect(firstBack).toBe(false);
    // A third job must still wait: the one place is the other job's.
    let thirdIn = false;
    const third = gate.enter().then((place) => ((thirdIn = true), place));
    await settle();
    expect(thirdIn).toBe(false);
    other.leave(); // the place goes to the job, which gives it on (its second wait is outside)
    await settle();
    expect(thirdIn).toBe(true);
    second.resolve();
    await settle();
    expect(gate.queued).toBe(1); // the job, behind the third
    (await third).leave();
    await Promise.all([firstWait, secondWait]);
    job.leave();
    (await gate.enter()).leave();
    expect(gate.queued).toBe(0);
  });

  it('leaving while the place is being taken back hands it on when it comes, once', async () => {
    const gate = new WorkGate(1);
    const job = await gate.enter();
    const llm = deferred();
    const wait = job.outside(() => llm.promise);
    const other = await gate.enter();
    llm.resolve();
    await settle();
    let nextIn = false;
    const next = gate.enter().then((place) => ((nextIn = true), place));
    let back = false;
    void wait.then(() => (back = true));
    job.leave(); // e.g. the job's other work failed while its LLM answer waited for the place
    await settle();
    // Nothing came free: the other job still holds the one place, so no one is let in.
    expect(back).toBe(false);
    expect(nextIn).toBe(false);
    other.leave();
    await wait;
    await settle();
    expect(nextIn).toBe(true);
    // Exactly one place went round: another waiter is not admitted beside `next`.
    let lastIn = false;
    const last = gate.enter().then((place) => ((lastIn = true), place));
    await settle();
    expect(lastIn).toBe(false);
    (await next).leave();
    (await last).leave();
  });

  it('a cancelled job stops waiting to take its place back, and holds none', async () => {
    const gate = new WorkGate(1);
    const controller = new AbortController();
    const job = await gate.enter(controller.signal);
    const llm = deferred();
    const wait = job.outside(() => llm.promise);
    const other = await gate.enter();
    llm.resolve();
    await settle();
    expect(gate.queued).toBe(1);
    controller.abort('lock lost');
    await expect(wait).rejects.toMatchObject({ name: 'AbortError', message: 'lock lost' });
    expect(gate.queued).toBe(0);
    job.leave();
    other.leave();
    // One place, free: one job gets in, the next waits.
    const a = await gate.enter();
    let bIn = false;
    void gate.enter().then((b) => ((bIn = true), b.leave()));
    await settle();
    expect(bIn).toBe(false);
    a.leave();
    await settle();
    expect(bIn).toBe(true);
  });

  it('leaving is idempotent and frees exactly one place', async () => {
    const gate = new WorkGate(1);
    const place = await gate.enter();
    place.leave();
    place.leave();
    const admitted: number[] = [];
    void gate.enter().then(() => admitted.push(1));
    void gate.enter().then(() => admitted.push(2));
    await settle();
    expect(admitted).toEqual([1]);
    await expect(place.outside(async () => 'late')).rejects.toThrow(/left/);
  });

  it('admits a lower rank first, then arrival order; a place taken back keeps its rank', async () => {
    const gate = new WorkGate(1);
    const holder = await gate.enter(undefined, 5);
    const admitted: string[] = [];
    const enter = (name: string, rank: number) =>
      gate.enter(undefined, rank).then((place) => {
        admitted.push(name);
        return place;
      });
    const backlog = [enter('a-3', 3), enter('a-4', 4), enter('a-3 again', 3)];
    const single = enter('b-1', 1);
    // The holder waits on the LLM: the lowest rank takes its place, whatever came first.
    let resumed = false;
    const call = holder.outside(async () => undefined).then(() => (resumed = true));
    await settle();
    expect(admitted).toEqual(['b-1']);
    (await single).leave();
    await settle();
    expect(admitted).toEqual(['b-1', 'a-3']);
    (await backlog[0]!).leave();
    await settle();
    expect(admitted).toEqual(['b-1', 'a-3', 'a-3 again']);
    // The holder's rank 5 comes back behind rank 4, which waited less long.
    (await backlog[2]!).leave();
    await settle();
    expect(admitted).toEqual(['b-1', 'a-3', 'a-3 again', 'a-4']);
    expect(resumed).toBe(false);
    (await backlog[1]!).leave();
    await call;
    holder.leave();
  });

  it('needs at least one place', () => {
    expect(() => new WorkGate(0)).toThrow(RangeError);
    expect(() => new WorkGate(1.5)).toThrow(RangeError);
  });
});
