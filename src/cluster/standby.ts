// Warm standbys (docs/cluster.md): the instance that would take a node group next
// (src/policy/cluster/hrw.ts `standbyOf`) keeps its local copy of the group level with the group's
// log as it is written, so that taking the group over (its owner killed) replays the last moments'
// entries rather than everything since this instance last held the group.
//
// One follower per group, on this instance's connection: it brings the copy level with the log by
// the same algorithm a new owner uses (replica.ts; from the group's snapshot when the log was
// compacted past the copy), then follows the subject with one JetStream consumer, applying entries
// as they come, in batches. A gap (the log compacted past what it follows), an error, or a consumer
// that delivers nothing while the log's tail moves on (a NATS server died under it) ends the
// consumer: the copy is brought level again and a new consumer follows. No consumer is created per
// entry: the cluster's JetStream API sees one per follower, not one per commit.
import { DeliverPolicy } from '@nats-io/jetstream';
import type { KV } from '@nats-io/kv';
import { unpack } from 'msgpackr';
import type { Logger } from 'pino';
import { catchUp, follows, type Logged } from '../policy/cluster/snapshot.js';
import type { Store } from '../store/store.js';
import { CONSUMER_IDLE_MS, STREAMS, walSubject, type Jet } from './nats.js';
import { LocalCopy, type Entry } from './replica.js';
import { GroupSnapshots } from './snapshots.js';

/** A consumer that delivered nothing this long is checked against the log's tail (and replaced if behind). */
const QUIET_MS = 3000;
/** Entries applied in one LMDB transaction at most. */
const BATCH = 500;

class Follower {
  private stopped = false;
  private readonly done: Promise<void>;
  private fetching: { stop(): void } | null = null;
  private wake: (() => void) | null = null;
  private readonly copy: LocalCopy;
  /** Up to where the copy held the log after the last batch, and when. */
  applied = 0;
  at = 0;

  constructor(
    private readonly j: Jet,
    store: Store,
    snapshots: GroupSnapshots,
    readonly group: string,
    private readonly log: Logger,
  ) {
    this.copy = new LocalCopy(j, store, group, snapshots, { stopped: () => this.stopped });
    this.done = this.run();
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        const r = await catchUp(this.copy, { restore: true });
        this.mark(r.applied);
        if (r.restored > 0) this.log.info({ group: this.group, applied: r.applied }, 'standby: took the node group from its snapshot');
        failures = 0;
        await this.follow();
      } catch (err) {
        if (this.stopped) break;
        failures += 1;
        // Once, then quietly: NATS away, an election, or a snapshot being replaced while read.
        if (failures === 3) this.log.warn({ group: this.group, err }, 'standby: cannot follow the log of a node group; retrying');
        await this.pause(Math.min(5000, 250 * 2 ** failures));
      }
    }
  }

  private mark(applied: number): void {
    this.applied = applied;
    this.at = Date.now();
  }

  /** Applies entries as one consumer delivers them; returns at a gap, or when it seems stuck. */
  private async follow(): Promise<void> {
    const consumer = await this.j.js.consumers.get(STREAMS.wal, {
      filter_subjects: walSubject(this.group),
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: this.applied + 1,
      inactive_threshold: CONSUMER_IDLE_MS,
    });
    let last = this.applied;
    let heard = Date.now();
    while (!this.stopped) {
      const messages = await consumer.fetch({ max_messages: BATCH, expires: 1000 });
      this.fetching = messages;
      let batch: Array<Logged<Entry>> = [];
      let gap = false;
      for await (const m of messages) {
        heard = Date.now();
        const entry = unpack(m.data) as Entry;
        if (!follows(last, entry.p)) {
          gap = true;
          messages.stop();
          break;
        }
        batch.push({ seq: m.seq, p: entry.p, entry });
        last = m.seq;
        if (m.info.pending === 0 || batch.length >= BATCH) {
          await this.copy.apply(batch);
          this.mark(last);
          batch = [];
        }
      }
      this.fetching = null;
      if (batch.length > 0) {
        await this.copy.apply(batch);
        this.mark(last);
      }
      // The log was compacted past what this follows: level again (from the snapshot).
      if (gap) return;
      // Quiet for a while: fine if the log is, not if its tail moved on (a consumer lost with a server).
      if (Date.now() - heard >= QUIET_MS) {
        if ((await this.copy.tail()) > last) return;
        heard = Date.now();
      }
    }
  }

  /** Waits `ms`, or less if stopped meanwhile. */
  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wake = done;
    });
  }

  /** Resolves once nothing more is written to the copy. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.fetching?.stop();
    this.wake?.();
    await this.done;
  }
}

export class Standbys {
  private readonly followers = new Map<string, Follower>();

  constructor(
    private readonly j: Jet,
    private readonly kv: KV,
    private readonly store: Store,
    private readonly log: Logger,
  ) {}

  /** Follows exactly `groups` from now on. */
  async set(groups: ReadonlySet<string>): Promise<void> {
    for (const group of groups) {
      if (this.followers.has(group)) continue;
      this.followers.set(group, new Follower(this.j, this.store, new GroupSnapshots(this.j, this.kv, group), group, this.log));
      this.log.debug({ group }, 'standby: following a node group');
    }
    for (const group of [...this.followers.keys()]) if (!groups.has(group)) await this.release(group);
  }

  /** Stops following the group (this instance takes it over, or another is its standby now): resolves once its copy is left alone. */
  async release(group: string): Promise<void> {
    const f = this.followers.get(group);
    if (!f) return;
    this.followers.delete(group);
    await f.stop();
  }

  /** The groups followed, with up to where their copies hold the log. */
  following(): Array<{ group: string; applied: number; at: number }> {
    return [...this.followers.values()].map((f) => ({ group: f.group, applied: f.applied, at: f.at }));
  }

  async stop(): Promise<void> {
    for (const group of [...this.followers.keys()]) await this.release(group);
  }
}
