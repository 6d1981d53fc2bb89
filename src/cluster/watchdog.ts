// A follower of a JetStream stream, watched (docs/cluster.md): the event log's follower (events.ts)
// and the KV watches of the buckets (watch.ts). After a NATS server is killed, nats.js's consumers
// can stop for good without a word. Every second the follower's position is compared with the
// stream's last sequence (src/policy/cluster/follower.ts): behind and not moving for 3 s, or
// ended, it is made again from where it stopped. A stream that does not answer (no leader) is no
// stall: the follower cannot move either.
import type { Logger } from 'pino';
import { checkFollower, followerWatch, type FollowerWatch } from '../policy/cluster/follower.js';

/** How often the follower is checked against the stream, and how long it may stand still while behind. */
const CHECK_MS = 1000;
const STALL_MS = 3000;

export interface Watched {
  /** The last sequence the follower delivered. */
  position(): number;
  /** The stream's last sequence now; throws when the stream does not answer. */
  streamLast(): Promise<number>;
  /** The follower ended, or could not be made. */
  ended(): boolean;
  /** Makes the follower again (it logs and counts why: `restart` when it stood still, else it had ended). */
  remake(why: { restart: boolean; at: number; streamLast: number | null; ended: boolean }): Promise<void>;
}

export class Watchdog {
  private watch: FollowerWatch = followerWatch(0, 0);
  private timer: NodeJS.Timeout | null = null;
  private checking = false;
  private stopped = false;

  constructor(
    private readonly w: Watched,
    private readonly log: Logger,
    /** What it watches, for the log. */
    private readonly what: string,
    private readonly now: () => number = Date.now,
  ) {}

  start(): void {
    this.watch = followerWatch(this.w.position(), this.now());
    this.timer = setInterval(() => void this.check(), CHECK_MS);
    this.timer.unref();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
  }

  private async check(): Promise<void> {
    if (this.checking || this.stopped) return;
    this.checking = true;
    try {
      let last: number | null = null;
      try {
        last = await this.w.streamLast();
      } catch {
        /* no leader now: the follower cannot move either */
      }
      const at = this.w.position();
      const { watch, restart } = checkFollower(this.watch, at, last, this.now(), STALL_MS);
      this.watch = watch;
      const ended = this.w.ended();
      if (!restart && !ended) return;
      await this.w.remake({ restart, at, streamLast: last, ended });
    } catch (err) {
      this.log.debug({ err, what: this.what }, 'could not follow again yet');
    } finally {
      this.checking = false;
    }
  }
}
