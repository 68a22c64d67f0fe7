/**
 * A map of at most `limit` entries that starts over when full: for caches whose entries are cheap
 * to recompute (a lookup costs nothing extra, unlike an LRU's bookkeeping).
 */
export class BoundedMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly limit: number) {}

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  set(key: K, value: V): void {
    if (!this.entries.has(key) && this.entries.size >= this.limit) this.entries.clear();
    this.entries.set(key, value);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }
}
