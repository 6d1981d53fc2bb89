// Calls to a node group's actor from an instance that does not own it (docs/cluster.md): one NATS
// request per call, to the group's subject, which only its owner subscribes to. The host's
// batchers (actors/group-handle.ts) have already gathered the lookups and heartbeats of one event-loop
// turn, so a round trip is paid per batch, not per request. While no owner answers (a handover,
// an owner killed and not yet replaced), the call is retried with backoff (cut short when the next
// owner says it serves the group: `sy.serving`), then fails as the actor
// being unavailable: 503 NOT_READY with Retry-After, the contract of an actor restarting.
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { pack, unpack } from 'msgpackr';
import { rpcSubject } from './nats.js';

/**
 * An owner that starts serving a group says so here (the group's name as the message): forwarded
 * calls waiting to try again try at once, instead of at the end of their backoff.
 */
const SERVING_SUBJECT = 'sy.serving';

/** What a forwarded call comes back with. */
type Reply = { r: unknown } | { x: 'unavailable'; why: string } | { e: string };

export class NotServedHere extends Error {
  constructor(
    readonly group: string,
    why: string,
  ) {
    super(`node group '${group}' is not served right now: ${why}`);
    this.name = 'NotServedHere';
  }
}

/**
 * Calls that may be sent twice: a retry after a timeout (the request or its answer lost with a NATS
 * server that died under it) answers the same. Others (a provision's create) are sent again only
 * when nobody received them (no responders).
 */
const IDEMPOTENT = new Set(['lookups', 'heartbeats', 'getProvision', 'listProvisions', 'listStreams', 'detail', 'counts', 'hasNode', 'stats']);

export interface ForwardOptions {
  /** How long a call keeps trying before it fails as unavailable (ms). */
  deadlineMs: number;
  /** Each request waits this long for an answer (an owner's actor may be committing). */
  requestTimeoutMs: number;
  /** The same, for a call that may be sent again: a shorter wait, then another try. */
  retryTimeoutMs: number;
}

export class Forwarder {
  readonly counters = { forwarded: 0, retried: 0, failed: 0, served: 0 };
  private readonly subs = new Map<string, Subscription>();
  /** Calls waiting to try a group again: woken when an owner says it serves the group. */
  private readonly waiting = new Map<string, Set<() => void>>();

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: ForwardOptions = { deadlineMs: 4000, requestTimeoutMs: 5000, retryTimeoutMs: 1000 },
  ) {
    nc.subscribe(SERVING_SUBJECT, {
      callback: (err, m) => {
        if (!err) for (const wake of this.waiting.get(m.string()) ?? []) wake();
      },
    });
  }

  /** Waits `ms` before trying `group` again, or less if an owner starts serving it meanwhile. */
  private backoff(group: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      let set = this.waiting.get(group);
      if (!set) this.waiting.set(group, (set = new Set()));
      const wake = () => {
        clearTimeout(timer);
        set.delete(wake);
        if (set.size === 0 && this.waiting.get(group) === set) this.waiting.delete(group);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      set.add(wake);
    });
  }

  /** Calls `method` on the owner of `group`; rejects with NotServedHere once the deadline passes with no owner answering. */
  async call(group: string, method: string, args: unknown[]): Promise<unknown> {
    this.counters.forwarded++;
    const deadline = Date.now() + this.options.deadlineMs;
    const payload = pack({ m: method, a: args });
    let wait = 50;
    let why = 'no instance owns it';
    const again = IDEMPOTENT.has(method);
    for (;;) {
      try {
        const timeout = again ? Math.max(100, Math.min(this.options.retryTimeoutMs, deadline - Date.now())) : this.options.requestTimeoutMs;
        const m = await this.nc.request(rpcSubject(group), payload, { timeout });
        const reply = unpack(m.data) as Reply;
        if ('r' in reply) return reply.r;
        if ('e' in reply) throw new Error(reply.e);
        why = reply.why;
      } catch (err) {
        const text = (err as Error).message ?? '';
        // No responders: nobody subscribes (the owner is gone or moving). A timeout: the owner
        // died under the request, or is stuck; both are retried until the deadline.
        const noResponders = /no responders|503/i.test(text);
        if (!noResponders && !/timeout|TIMEOUT|disconnect|closed/i.test(text) && !(err as { code?: string }).code) throw err;
        // A call that may have been received is not sent again unless sending it twice is harmless.
        if (!noResponders && !again) {
          this.counters.failed++;
          throw new NotServedHere(group, `its owner did not answer in time (${text}); the call may have been carried out`);
        }
        why = noResponders ? 'no instance serves it (handover under way?)' : `its owner did not answer (${text})`;
      }
      if (Date.now() + wait > deadline) {
        this.counters.failed++;
        throw new NotServedHere(group, why);
      }
      this.counters.retried++;
      await this.backoff(group, wait);
      wait = Math.min(400, wait * 2);
    }
  }

  /**
   * Answers the group's forwarded calls with `handle`, while `serving()` holds: a call that arrives
   * once it no longer does (the lease ran out, a handover started) is told to retry elsewhere.
   */
  serve(group: string, serving: () => boolean, handle: (method: string, args: unknown[]) => Promise<unknown>): void {
    this.subs.get(group)?.unsubscribe();
    const sub = this.nc.subscribe(rpcSubject(group), {
      callback: (err, msg) => {
        if (err) return;
        if (!serving()) return void msg.respond(pack({ x: 'unavailable', why: 'its owner is handing it over' } satisfies Reply));
        let call: { m: string; a: unknown[] };
        try {
          call = unpack(msg.data) as { m: string; a: unknown[] };
        } catch {
          return void msg.respond(pack({ e: 'an unreadable forwarded call' } satisfies Reply));
        }
        this.counters.served++;
        handle(call.m, call.a).then(
          (r) => msg.respond(pack({ r } satisfies Reply)),
          (e: Error) => msg.respond(pack((e.name === 'ActorUnavailable' || e.name === 'NotServedHere' ? { x: 'unavailable', why: e.message } : { e: e.message }) satisfies Reply)),
        );
      },
    });
    this.subs.set(group, sub);
    // Once the server has the subscription (so that its interest reaches the others before this does), calls waiting for the group try again.
    void this.nc
      .flush()
      .then(() => this.nc.publish(SERVING_SUBJECT, group))
      .catch(() => {});
  }

  /** Stops answering for the group: callers get no responders, and retry until the next owner serves. */
  unserve(group: string): void {
    this.subs.get(group)?.unsubscribe();
    this.subs.delete(group);
  }
}
