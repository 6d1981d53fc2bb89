// What the torture knows of each key it writes, and so what the key may hold after the next kill.
//
// Keys are written by one request at a time (workers lock them), so for every key the acceptable
// values are the last acknowledged one plus at most the one in flight at the kill. Answers that
// reveal a key without writing it (a second publish lookup of a stream being bound, a read of a
// provision being written) count too: what an answer says is durable (docs/persistence.md), so it narrows
// what the key may hold exactly as an acknowledgement does.

export class Key {
  allowed: Set<string>;
  busy = false;
  /** What the write in flight may leave ('any': some origin, not known before its answer). */
  writing: readonly string[] | null = null;
  /** For each read in flight: every value the key may have held since it was sent. */
  private readonly reads = new Set<Set<string>>();

  constructor(
    readonly name: string,
    initial: string,
  ) {
    this.allowed = new Set([initial]);
  }

  /** A write of one of `values` begins. */
  writes(values: readonly string[]): void {
    this.writing = values;
    for (const r of this.reads) for (const v of values) r.add(v);
  }

  acknowledged(...values: string[]): void {
    this.allowed = new Set(values);
  }

  cutOff(...values: string[]): void {
    for (const v of values) this.allowed.add(v);
  }

  /** A read is sent: what it may answer is what the key holds now, or any value written until it answers. */
  reading(): Set<string> {
    const r = new Set([...this.allowed, ...(this.writing ?? [])]);
    this.reads.add(r);
    return r;
  }

  /**
   * The read answered `value`. It must be what was acknowledged, or what the write in flight
   * writes (then that write is durable: the key holds it from now on), or a value the key held
   * while the read was in flight. False if the answer shows something nobody wrote: an answer
   * that contradicts what was acknowledged.
   */
  revealed(read: Set<string>, value: string): boolean {
    this.reads.delete(read);
    const among = (values: Iterable<string>) => [...values].some((v) => v === value || (v === 'any' && value !== 'absent'));
    if (this.allowed.has(value) || (this.writing !== null && among(this.writing))) {
      this.allowed = new Set([value]);
      return true;
    }
    return among(read);
  }

  /** Whether `seen`, read after a restart, is one of the values the key may hold. */
  admits(seen: string): boolean {
    return this.allowed.has(seen) || (seen !== 'absent' && this.allowed.has('any'));
  }

  /** The one value a write chooses its method by: certain between kills. */
  get value(): string {
    return [...this.allowed][0]!;
  }
}
