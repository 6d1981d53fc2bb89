// Cluster mode: an actor thread started before it is needed (docs/cluster.md, "Warm standbys").
// Most of a takeover's start is a thread's own: spawning it and loading its modules (NATS's among
// them), a few hundred milliseconds on a busy machine. The host keeps one spare thread, loaded and
// idle; the next group acquired on this instance starts on it, and another spare is started in its
// place. One idle thread per instance, however many groups there are.
import { Worker } from 'node:worker_threads';
import { guardedRemote, InFlight, nodeEndpoint } from './comlink.js';
import type { GroupApi } from './group/actor.js';

export interface Spare {
  worker: Worker;
  api: ReturnType<typeof guardedRemote<GroupApi>>;
  inFlight: InFlight;
}

export class Spares {
  private next: { spare: Spare; loaded: Promise<boolean> } | null = null;
  private closed = false;

  constructor(private readonly onError: (err: Error) => void) {}

  /** The spare thread once it is loaded (a new one is started in its place), or null: start one. */
  async take(): Promise<Spare | null> {
    const n = this.next;
    this.next = null;
    this.prepare();
    if (!n) return null;
    // Still loading: less to wait for than a thread started now.
    if (await n.loaded) return n.spare;
    await n.spare.worker.terminate();
    return null;
  }

  /** Starts a spare if there is none. */
  prepare(): void {
    if (this.closed || this.next) return;
    const worker = new Worker(new URL('./group/actor.js', import.meta.url), { name: 'group:spare' });
    const inFlight = new InFlight();
    const api = guardedRemote<GroupApi>(nodeEndpoint(worker), inFlight);
    const entry = {
      spare: { worker, api, inFlight },
      loaded: api.warm().then(
        () => true,
        (err: Error) => {
          if (!this.closed) this.onError(err);
          return false;
        },
      ),
    };
    this.next = entry;
    worker.once('exit', () => {
      inFlight.fail(new Error('the spare actor thread exited'));
      if (this.next === entry) this.next = null;
    });
    // Until a group's handle takes it (and listens itself), its errors are the host's to report.
    worker.on('error', (err) => {
      if (this.next === entry) this.onError(err);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const n = this.next;
    this.next = null;
    await n?.spare.worker.terminate();
  }
}
