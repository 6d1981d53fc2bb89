// Actor threads started before they are needed. Most of an actor's start is its thread's own:
// spawning it and loading its modules, several hundred milliseconds on a busy machine (TypeBox's
// hundreds of files above all). So the service starts a group actor's thread and the supervisor's
// as its very first step (`preloadThreads`), and they load while the front end reads its config,
// opens the store and hashes passwords; the first group and the supervisor then start on them.
//
// Cluster mode (docs/cluster.md, "Warm standbys") goes further: the host always keeps one group
// thread loaded and idle (NATS's modules too); the next group acquired on this instance starts on
// it, and another spare is started in its place. One idle thread per instance, however many groups.
import { Worker } from 'node:worker_threads';
import { guardedRemote, InFlight, nodeEndpoint } from './comlink.js';
import type { GroupApi } from './group/actor.js';
import type { ReadyThread } from './supervised-worker.js';
import type { SupervisorApi } from './supervisor/actor.js';

/**
 * Spawns a thread and readies its calls. Until adopted it keeps the process alive no longer than
 * the process would live anyway, and a thread that dies first fails every call made to it, so
 * that an adopter's first call fails (and it starts another) instead of waiting for ever.
 */
function spawnThread<Api>(entry: URL, name: string): ReadyThread<Api> {
  const worker = new Worker(entry, { name });
  const inFlight = new InFlight();
  worker.once('exit', () => inFlight.fail(new Error(`the ${name} thread exited`)));
  const api = guardedRemote<Api>(nodeEndpoint(worker), inFlight);
  // After the API's listener: a 'message' listener refs the thread again.
  worker.unref();
  return { worker, api, inFlight };
}

const GROUP_ENTRY = new URL('./group/actor.js', import.meta.url);
const SUPERVISOR_ENTRY = new URL('./supervisor/actor.js', import.meta.url);

export class Spares {
  private next: { spare: ReadyThread<GroupApi>; loaded: Promise<boolean> } | null = null;
  private closed = false;

  /** `cluster`: keep one spare at all times, loaded for cluster mode; otherwise only the one prepared. */
  constructor(
    private readonly onError: (err: Error) => void,
    private readonly cluster: boolean,
  ) {}

  /** The spare thread once it is loaded (in cluster mode a new one is started in its place), or null: start one. */
  async take(): Promise<ReadyThread<GroupApi> | null> {
    const n = this.next;
    this.next = null;
    if (this.cluster) this.prepare();
    if (!n) return null;
    // Taken: it keeps the process alive from now on, while the taker waits for it above all (with
    // nothing else running, an unref'd thread's answer would never be waited for).
    n.spare.worker.ref();
    // Still loading: less to wait for than a thread started now.
    if (await n.loaded) return n.spare;
    await n.spare.worker.terminate();
    return null;
  }

  /** Starts a spare if there is none. */
  prepare(): void {
    if (this.closed || this.next) return;
    const spare = spawnThread<GroupApi>(GROUP_ENTRY, 'group:spare');
    const entry = {
      spare,
      loaded: spare.api.warm(this.cluster).then(
        () => true,
        (err: Error) => {
          if (!this.closed) this.onError(err);
          return false;
        },
      ),
    };
    this.next = entry;
    spare.worker.once('exit', () => {
      if (this.next === entry) this.next = null;
    });
    // Until a group's handle takes it (and listens itself), its errors are the host's to report.
    spare.worker.on('error', (err) => {
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

/** The supervisor's thread started early: adopted once, by its first start. */
export class EarlySupervisor {
  private thread: ReadyThread<SupervisorApi> | null = spawnThread<SupervisorApi>(SUPERVISOR_ENTRY, 'supervisor');

  constructor(onError: (err: Error) => void) {
    // Until the supervisor's start adopts it (and listens itself), its errors are the host's to report.
    const worker = this.thread!.worker;
    worker.on('error', (err) => {
      if (this.thread?.worker === worker) onError(err);
    });
  }

  take(): ReadyThread<SupervisorApi> | null {
    const thread = this.thread;
    this.thread = null;
    thread?.worker.ref();
    return thread;
  }

  async close(): Promise<void> {
    const thread = this.thread;
    this.thread = null;
    await thread?.worker.terminate();
  }
}

/** The threads a service starts first (the start of src/root/service.ts). */
export interface PreloadedThreads {
  group: Spares;
  supervisor: EarlySupervisor;
}

export function preloadThreads(cluster: boolean, onError: (err: Error) => void): PreloadedThreads {
  const group = new Spares(onError, cluster);
  group.prepare();
  return { group, supervisor: new EarlySupervisor(onError) };
}
