// A KV bucket followed for as long as the instance runs (the leases, the live instances, the shared
// state: docs/cluster.md), watched like the event log's follower. nats.js 3.4's KV watch can stand
// still for good after the client's own NATS server is killed: tried on this machine, 2 of 6 such
// kills left a watch with nothing new for 20 s and more while the bucket took writes, and nothing
// said so. A lease watch that stood still moved a group in the cluster test of a lost NATS server;
// a shared-state watch that stood still would keep a password changed elsewhere from retiring the
// old tokens here. Every second the last revision this watch delivered is compared with the
// bucket's last sequence (src/policy/cluster/follower.ts): behind and not moving for 3 s, or ended,
// it is made again from the revision after its last, logged and counted.
import type { KV, KvWatchEntry } from '@nats-io/kv';
import type { Logger } from 'pino';
import { Watchdog } from './watchdog.js';

export class GuardedWatch {
  /** The last revision delivered (or known gone from the bucket). */
  private last = 0;
  private generation = 0;
  private iterator: { stop(): void } | null = null;
  private ended = false;
  private stopped = false;
  private readonly watchdog: Watchdog;
  readonly counters = { restarts: 0 };

  constructor(
    private readonly kv: KV,
    /** Called with each entry, in revision order, once. */
    private readonly onEntry: (e: KvWatchEntry) => void,
    private readonly what: string,
    private readonly log: Logger,
    now: () => number = Date.now,
  ) {
    this.watchdog = new Watchdog(
      {
        position: () => this.last,
        streamLast: async () => {
          const state = (await this.kv.status()).streamInfo.state;
          // What aged out (max_age) before this watch saw it is not waited for.
          this.last = Math.max(this.last, state.first_seq - 1);
          return state.last_seq;
        },
        ended: () => this.ended,
        remake: async ({ at, streamLast, ended }) => {
          this.counters.restarts++;
          this.log.warn({ watch: this.what, at, bucketLast: streamLast, ended }, 'a watch of a bucket stood still behind it: following it again');
          await this.open(this.last + 1);
        },
      },
      log,
      `the ${what} watch`,
      now,
    );
  }

  /** Follows every key: the current values first, then every change. */
  async start(): Promise<void> {
    await this.open(undefined);
    this.watchdog.start();
  }

  private async open(from: number | undefined): Promise<void> {
    const generation = ++this.generation;
    this.ended = true;
    this.iterator?.stop();
    const it = await this.kv.watch(from === undefined ? { key: '>' } : { key: '>', resumeFromRevision: from });
    if (generation !== this.generation || this.stopped) return void it.stop();
    this.iterator = it;
    this.ended = false;
    void (async () => {
      for await (const e of it) {
        if (generation !== this.generation) break;
        // A watch made again can start on what its predecessor delivered.
        if (e.revision <= this.last) continue;
        this.last = e.revision;
        this.onEntry(e);
      }
      if (generation === this.generation && !this.stopped) this.ended = true;
    })().catch((err: Error) => {
      if (generation === this.generation) this.ended = true;
      this.log.warn({ err, watch: this.what }, 'a watch of a bucket failed: following it again');
    });
  }

  stop(): void {
    this.stopped = true;
    this.watchdog.stop();
    this.iterator?.stop();
  }
}
