/**
 * The challenges this process marked spent while the shared store could not (a Redis outage): a replay to this
 * process is still refused, one to another process is not. Bounded: past `limit` entries the oldest go first,
 * expired ones before that.
 */
export class LocalSpentSet {
  /** Challenge id → when it expires; a Map keeps insertion order, so the oldest entries come first. */
  private readonly expiries = new Map<string, number>();

  constructor(
    private readonly limit: number,
    private readonly now: () => number,
  ) {}

  /** True when `id` was not spent here (and is now, for `ttlMs`); false for a replay. */
  spend(id: string, ttlMs: number): boolean {
    const now = this.now();
    const expiry = this.expiries.get(id);
    if (expiry !== undefined && expiry > now) return false;
    this.expiries.delete(id);
    for (const [oldest, until] of this.expiries) {
      if (until > now && this.expiries.size < this.limit) break;
      this.expiries.delete(oldest);
    }
    this.expiries.set(id, now + ttlMs);
    return true;
  }

  get size(): number {
    return this.expiries.size;
  }
}
