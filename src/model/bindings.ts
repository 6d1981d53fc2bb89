// Stream bindings and their expiry (docs/choosing-nodes.md). Owns every binding of the group
// (stream → origin [, transcoder], PENDING or LIVE), the streams bound to each node, the LIVE
// count per origin (scale-in takes origins with live publishers last), the PENDING tallies the
// config's caps count against, and the expiry buckets (expiry.ts) in which a tick finds the
// bindings that timed out. Every change is written and told through the effect log; the
// subscriber counts on a binding are heartbeats.ts's to keep (they are never stored).
import type { BindingRecord } from '../domain/records.js';
import type { Failure } from '../domain/failure.js';
import type { BindingState } from '../domain/vocabulary.js';
import { SERVING } from '../policy/states.js';
import type { EffectLog } from './effects.js';
import { ExpiryBuckets } from './expiry.js';
import type { LiveNode, Nodes } from './nodes.js';
import type { Settings } from './settings.js';

/** Seconds since 2020-01-01: binding times are small integers then, not a boxed number each. */
const EPOCH_S = 1_577_836_800;
export const toS = (ms: number) => Math.floor(ms / 1000) - EPOCH_S;
export const toMs = (s: number) => (s + EPOCH_S) * 1000;

/**
 * A binding as the model keeps it: one fixed shape, times in seconds (so a timeout is never early
 * and at most two seconds late), and the origin's id shared with its node. With a million
 * bindings, this is most of the actor's memory.
 */
export class LiveBinding {
  constructor(
    readonly stream: string,
    public origin: string,
    public transcoder: string | null,
    public state: BindingState,
    public boundAt: number,
    public since: number,
    public lastListed: number,
    public subscribers: number,
    /** Who asked for it, while it is PENDING (the token subject the PENDING caps count against). */
    public by: string | null = null,
    /** The second it is filed under in the expiry buckets. */
    public dueS = -1,
  ) {}
}

export class Bindings {
  private readonly byStream = new Map<string, LiveBinding>();
  /** Streams by the node they are bound to (as origin or as transcoder). */
  private readonly boundTo = new Map<string, Set<string>>();
  /** LIVE bindings per origin: scale-in takes origins with live publishers last. */
  private readonly liveAt = new Map<string, number>();
  /** Bindings by the second they could time out (PENDING: publishTimeout; LIVE: streamTimeout). */
  private readonly expiring = new ExpiryBuckets<LiveBinding>();
  /** PENDING bindings, in all and by who asked (the caps of config limits). */
  private pendingTotal = 0;
  private readonly pendingBy = new Map<string, number>();

  constructor(
    private readonly settings: Settings,
    private readonly nodes: Nodes,
    private readonly effects: EffectLog,
  ) {}

  get(stream: string): LiveBinding | undefined {
    return this.byStream.get(stream);
  }

  has(stream: string): boolean {
    return this.byStream.has(stream);
  }

  all(): IterableIterator<LiveBinding> {
    return this.byStream.values();
  }

  streams(): IterableIterator<string> {
    return this.byStream.keys();
  }

  /** The streams bound to a node, as origin or as transcoder. */
  boundToNode(id: string): ReadonlySet<string> | undefined {
    return this.boundTo.get(id);
  }

  /** Whether an origin holds a LIVE binding. */
  hasLive(origin: string): boolean {
    return this.liveAt.has(origin);
  }

  /** The binding as stored. */
  record(b: LiveBinding): BindingRecord {
    return {
      stream: b.stream,
      origin: b.origin,
      ...(b.transcoder ? { transcoder: b.transcoder } : {}),
      state: b.state,
      boundAt: toMs(b.boundAt),
      since: toMs(b.since),
      ...(b.by !== null ? { by: b.by } : {}),
    };
  }

  /** Takes a stored binding in (at start, or when the actor loads one it had not yet). */
  adopt(b: BindingRecord, now: number): void {
    if (this.byStream.has(b.stream)) return;
    const origin = this.nodes.get(b.origin)?.id ?? b.origin;
    const transcoder = b.transcoder ? (this.nodes.get(b.transcoder)?.id ?? b.transcoder) : null;
    this.index(new LiveBinding(b.stream, origin, transcoder, b.state, toS(b.boundAt), toS(b.since), toS(now), 0, b.state === 'PENDING' ? (b.by ?? null) : null));
  }

  /**
   * A new binding past the group's PENDING caps: 429, never a new node (README, Security). PENDING
   * bindings are publish lookups not yet published; they clear when their streams go LIVE or
   * after publishTimeout, so a client that asks for streams it never publishes runs out of room
   * of its own, not the fleet's.
   */
  pendingRefusal(by: string | null): Failure | null {
    const { limits, timing, name } = this.settings.group;
    const { pendingBindings, pendingPerToken } = limits;
    const retryAfter = Math.max(1, Math.min(60, Math.ceil(timing.publishTimeout / 1000 / 4)));
    if (this.pendingTotal >= pendingBindings) {
      return {
        ok: false,
        status: 429,
        code: 'RATE_LIMITED',
        detail: `node group '${name}' holds ${this.pendingTotal} streams looked up and not yet published (limits.pendingBindings); publish them, or retry later`,
        retryAfter,
      };
    }
    if (by !== null && (this.pendingBy.get(by) ?? 0) >= pendingPerToken) {
      return {
        ok: false,
        status: 429,
        code: 'RATE_LIMITED',
        detail: `this token holds ${pendingPerToken} streams looked up and not yet published in node group '${name}' (limits.pendingPerToken); publish them, or retry later`,
        retryAfter,
      };
    }
    return null;
  }

  /** Binds the stream (anew: PENDING) to the origin and transcoder, in place of `existing` if any (then stream.moved if its origin changes). */
  bindTo(stream: string, origin: LiveNode, transcoder: LiveNode | undefined, existing: LiveBinding | undefined, now: number, moveReason: string, by: string | null = null): void {
    const group = this.settings.name;
    if (existing && existing.origin !== origin.id) {
      this.effects.emit({ type: 'stream.moved', group, stream, from: existing.origin, to: origin.id, reason: moveReason });
    }
    const nowS = toS(now);
    const b = new LiveBinding(stream, origin.id, transcoder?.id ?? null, 'PENDING', existing?.boundAt ?? nowS, nowS, nowS, existing?.subscribers ?? 0, by);
    if (existing) this.unindex(existing);
    this.index(b);
    this.effects.write('binding', stream, this.record(b));
    if (!existing) this.effects.emit({ type: 'stream.bound', group, stream, origin: origin.id, ...(transcoder ? { transcoder: transcoder.id } : {}) });
  }

  private index(b: LiveBinding): void {
    this.byStream.set(b.stream, b);
    if (b.state === 'LIVE') this.liveAt.set(b.origin, (this.liveAt.get(b.origin) ?? 0) + 1);
    else this.countPending(b, 1);
    this.fileExpiry(b);
    this.boundToAdd(b.origin, b.stream);
    if (b.transcoder) this.boundToAdd(b.transcoder, b.stream);
  }

  private boundToAdd(id: string, stream: string): void {
    let set = this.boundTo.get(id);
    if (!set) this.boundTo.set(id, (set = new Set()));
    set.add(stream);
  }

  private unindex(b: LiveBinding): void {
    this.byStream.delete(b.stream);
    if (b.state === 'LIVE') {
      const live = (this.liveAt.get(b.origin) ?? 1) - 1;
      if (live > 0) this.liveAt.set(b.origin, live);
      else this.liveAt.delete(b.origin);
    } else this.countPending(b, -1);
    for (const id of b.transcoder ? [b.origin, b.transcoder] : [b.origin]) {
      const set = this.boundTo.get(id);
      set?.delete(b.stream);
      if (set?.size === 0) this.boundTo.delete(id);
    }
  }

  /** The PENDING caps' tallies and the origin's reserved load, kept in step wherever a binding enters or leaves PENDING. */
  private countPending(b: LiveBinding, delta: 1 | -1): void {
    this.nodes.reserve(b.origin, delta);
    this.pendingTotal += delta;
    if (b.by === null) return;
    const n = (this.pendingBy.get(b.by) ?? 0) + delta;
    if (n > 0) this.pendingBy.set(b.by, n);
    else this.pendingBy.delete(b.by);
  }

  private unbind(b: LiveBinding, reason: string): void {
    this.unindex(b);
    this.effects.write('binding', b.stream, null);
    this.effects.emit({ type: 'stream.unbound', group: this.settings.name, stream: b.stream, origin: b.origin, reason });
  }

  /**
   * A node lists a stream as published there. docs/choosing-nodes.md: a binding turns LIVE when
   * its origin lists the stream; without admission, a stream published at an origin without a
   * lookup, or at another origin than the one bound (out of service), is bound where it really
   * is. Answers whether the node may keep the stream's publisher (false: the reply drops it).
   */
  published(stream: string, node: LiveNode, now: number): boolean {
    const b = this.byStream.get(stream);
    const role = node.record.role;
    // With admission on, a node admits only publishers holding a token for the stream's bound
    // origin: a stream listed anywhere else was moved away or ended since, and its publisher is
    // to be dropped there (docs/security.md), never followed.
    const admitted = this.settings.group.admission.enabled;
    if (!b) {
      if (admitted) return false;
      // A publisher reached an origin without asking: record where the stream really is.
      if (role !== 'origin') return true;
      this.bindTo(stream, node, undefined, undefined, now, '');
      this.markLive(this.byStream.get(stream)!, now);
      return true;
    }
    if (b.origin === node.id || b.transcoder === node.id) {
      b.lastListed = toS(now);
      if (b.state === 'PENDING' && (b.origin === node.id || !b.transcoder)) this.markLive(b, now);
      return true;
    }
    if (admitted) return false;
    const bound = this.nodes.get(b.origin);
    if (role === 'origin' && (!bound || !SERVING.has(bound.record.state))) {
      this.bindTo(stream, node, b.transcoder ? this.nodes.get(b.transcoder) : undefined, b, now, 'published at another origin');
      this.markLive(this.byStream.get(stream)!, now);
    }
    return true;
  }

  /** An admin ends a stream (POST /streams/{nodeGroup}/{streamName}/end): unbound now; its publishers are dropped at their next heartbeat. */
  end(stream: string): boolean {
    const b = this.byStream.get(stream);
    if (!b) return false;
    this.unbind(b, 'ended through the API');
    return true;
  }

  private markLive(b: LiveBinding, now: number): void {
    if (b.state !== 'LIVE') {
      this.liveAt.set(b.origin, (this.liveAt.get(b.origin) ?? 0) + 1);
      this.countPending(b, -1);
      b.by = null;
    }
    b.state = 'LIVE';
    b.since = toS(now);
    b.lastListed = b.since;
    // Its deadline is now streamTimeout's, which can come before publishTimeout's.
    this.fileExpiry(b);
    this.effects.write('binding', b.stream, this.record(b));
    this.effects.emit({ type: 'stream.live', group: this.settings.name, stream: b.stream, origin: b.origin });
  }

  /**
   * A node left the group. A stream bound to it as origin keeps its binding until its own timeouts
   * end it (docs/choosing-nodes.md), as when its origin is FAULT: viewers are told to retry (503
   * with Retry-After, not 404), and the publisher's next lookup moves it (stream.moved). A stream
   * it transcoded forgets its transcoder: its next transcode lookup picks another.
   */
  nodeRemoved(id: string): void {
    for (const stream of [...(this.boundTo.get(id) ?? [])]) {
      const b = this.byStream.get(stream)!;
      if (b.origin !== id) {
        this.unindex(b);
        b.transcoder = null;
        this.index(b);
        this.effects.write('binding', b.stream, this.record(b));
      }
    }
  }

  // ---- expiry -------------------------------------------------------------------------------

  /** The last second a binding is kept without news: a timeout is never early, at most a second late. */
  private expiresAt(b: LiveBinding): number {
    const { streamTimeout, publishTimeout } = this.settings.group.timing;
    return b.state === 'LIVE' ? b.lastListed + Math.ceil(streamTimeout / 1000) : b.since + Math.ceil(publishTimeout / 1000);
  }

  private fileExpiry(b: LiveBinding): void {
    this.expiring.file(b, this.expiresAt(b) + 1);
  }

  /** After the timeouts changed: shorter ones bring deadlines forward, so every binding is filed again (the old entries go stale). */
  refile(): void {
    for (const b of this.byStream.values()) this.fileExpiry(b);
  }

  /** Unbinds streams that stopped (streamTimeout) or never started (publishTimeout). */
  expire(now: number): void {
    const { streamTimeout, publishTimeout } = this.settings.group.timing;
    const nowS = toS(now);
    for (const b of this.expiring.due(nowS)) {
      if (this.byStream.get(b.stream) !== b) continue; // unbound or bound anew since it was filed
      const expires = this.expiresAt(b);
      if (nowS <= expires) this.expiring.file(b, expires + 1);
      else if (b.state === 'LIVE') this.unbind(b, `not published for ${streamTimeout} ms`);
      else this.unbind(b, `never published within ${publishTimeout} ms`);
    }
  }
}
