import { describe, expect, it } from 'vitest';
import { BoundedMap } from './bounded-map';

describe('BoundedMap', () => {
  it('keeps at most its limit, starting over when a new key would pass it', () => {
    const map = new BoundedMap<string, number>(2);
    map.set('a', 1);
    map.set('b', 2);
    // Updating a key it holds is not growth.
    map.set('a', 3);
    expect([map.get('a'), map.get('b')]).toEqual([3, 2]);
    map.set('c', 4);
    expect([map.get('a'), map.get('b'), map.get('c')]).toEqual([undefined, undefined, 4]);
    map.delete('c');
    expect(map.get('c')).toBeUndefined();
  });
});
