/**
 * The time each tenant's requests held their turns lately, in turn-milliseconds that fade
 * exponentially (a tenant that kept one turn busy for the last few seconds stands near
 * `decayMs`, one that kept two busy near twice that): how the gate tells a tenant that floods from
 * one that trickles.
 */
export class TenantUsage {
  private readonly records = new Map<string, { value: number; at: number }>();
  private sweptAt = 0;

  constructor(private readonly decayMs: number) {}

  /** Adds `ms` of a turn held by `tenant`, at `now`. */
  add(tenant: string, ms: number, now: number): void {
    this.records.set(tenant, { value: this.of(tenant, now) + ms, at: now });
    if (now - this.sweptAt > 10 * this.decayMs) this.sweep(now);
  }

  /** What `tenant` has on its record at `now`. */
  of(tenant: string, now: number): number {
    const record = this.records.get(tenant);
    return record ? record.value * Math.exp(-(now - record.at) / this.decayMs) : 0;
  }

  /** Forgets the tenants whose record has faded to nothing, so the map holds only recent ones. */
  private sweep(now: number): void {
    this.sweptAt = now;
    for (const tenant of [...this.records.keys()]) if (this.of(tenant, now) < 1) this.records.delete(tenant);
  }
}
