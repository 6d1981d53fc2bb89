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

/** A thread spawned here, not yet taken. */
interface Early<Api> {
  thread: ReadyThread<Api>;
  /** Taken: it keeps the process alive, and its end is its adopter's to tell its callers. */
  adopted(): void;
}

/**
 * Spawns a thread and readies its calls. Until taken it keeps the process alive no longer than
 * the process would live anyway, and a thread that dies meanwhile fails every call made to it (a
 * spare's warm-up), instead of leaving it waiting for ever. Once taken, its adopter says how its
 * calls fail when it dies (SupervisedWorker: ActorUnavailable, a 503 to clients).
 */
function spawnThread<Api>(entry: URL, name: string): Early<Api> {
  const worker = new Worker(entry, { name });
  const inFlight = new InFlight();
  const exited = () => inFlight.fail(new Error(`the ${name} thread exited before it was used`));
  worker.once('exit', exited);
  const api = guardedRemote<Api>(nodeEndpoint(worker), inFlight);
  // After the API's listener: a 'message' listener refs the thread again.
  worker.unref();
  return {
    thread: { worker, api, inFlight },
    adopted: () => {
      worker.ref();
      worker.off('exit', exited);
    },
  };
}

const GROUP_ENTRY = new URL('./group/actor.js', import.meta.url);
const SUPERVISOR_ENTRY = new URL('./supervisor/actor.js', import.meta.url);

export class Spares {
  private next: { spare: Early<GroupApi>; loaded: Promise<boolean> } | null = null;
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
    const { worker } = n.spare.thread;
    // Waited for: it keeps the process alive from now on (with nothing else running, an unref'd
    // thread's answer would never come: Node ends the program mid-start).
    worker.ref();
    // Still loading: less to wait for than a thread started now.
    if (await n.loaded) {
      n.spare.adopted();
      return n.spare.thread;
    }
    await worker.terminate();
    return null;
  }

  /** Starts a spare if there is none. */
  prepare(): void {
    if (this.closed || this.next) return;
    const spare = spawnThread<GroupApi>(GROUP_ENTRY, 'group:spare');
    const { worker, api } = spare.thread;
    const entry = {
      spare,
      loaded: api.warm(this.cluster).then(
        () => true,
        (err: Error) => {
          if (!this.closed) this.onError(err);
          return false;
        },
      ),
    };
    this.next = entry;
    worker.once('exit', () => {
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
    await n?.spare.thread.worker.terminate();
  }
}

/** The supervisor's thread started early: adopted once, by its first start. */
export class EarlySupervisor {
  private early: Early<SupervisorApi> | null = spawnThread<SupervisorApi>(SUPERVISOR_ENTRY, 'supervisor');

  constructor(onError: (err: Error) => void) {
    // Until the supervisor's start adopts it (and listens itself), its errors are the host's to report.
    const worker = this.early!.thread.worker;
    worker.on('error', (err) => {
      if (this.early?.thread.worker === worker) onError(err);
    });
  }

  take(): ReadyThread<SupervisorApi> | null {
    const early = this.early;
    this.early = null;
    early?.adopted();
    return early?.thread ?? null;
  }

  async close(): Promise<void> {
    const early = this.early;
    this.early = null;
    await early?.thread.worker.terminate();
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
