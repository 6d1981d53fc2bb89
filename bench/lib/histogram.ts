// A fixed-size latency histogram in milliseconds: 0.1 ms steps up to 100 ms, 10 ms steps up to
// 10 s, then one overflow bucket. Constant memory however long a run lasts.
const FINE = 1000; // 0 .. 100 ms by 0.1 ms
const COARSE = 990; // 100 ms .. 10 s by 10 ms

export class Histogram {
  private readonly buckets = new Uint32Array(FINE + COARSE + 1);
  count = 0;
  max = 0;

  record(ms: number): void {
    const i = ms < 100 ? Math.floor(ms * 10) : ms < 10_000 ? FINE + Math.floor((ms - 100) / 10) : FINE + COARSE;
    this.buckets[Math.max(0, i)]!++;
    this.count++;
    if (ms > this.max) this.max = ms;
  }

  /** The upper edge of the bucket holding the p-th percentile (0 < p ≤ 100), in ms. */
  percentile(p: number): number {
    if (this.count === 0) return 0;
    const rank = Math.ceil((p / 100) * this.count);
    let seen = 0;
    for (let i = 0; i < this.buckets.length; i++) {
      seen += this.buckets[i]!;
      if (seen >= rank) return i < FINE ? (i + 1) / 10 : i < FINE + COARSE ? 100 + (i - FINE + 1) * 10 : this.max;
    }
    return this.max;
  }

  add(other: Histogram): void {
    for (let i = 0; i < this.buckets.length; i++) this.buckets[i]! += other.buckets[i]!;
    this.count += other.count;
    this.max = Math.max(this.max, other.max);
  }

  reset(): void {
    this.buckets.fill(0);
    this.count = 0;
    this.max = 0;
  }
}
