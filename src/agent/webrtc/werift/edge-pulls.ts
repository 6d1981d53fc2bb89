// An edge's (or relay's) pulls, one per stream however many watch it there (docs/webrtc.md, "The
// tree"): opened by the first viewer, shared by the later ones, opened again after a loss while
// viewers remain, lingering a while after the last one left, and started again from a new parent.
// The engine (engine.ts) owns the streams' hubs and sessions; this owns the pulls that feed them.
import type { ParentLink } from '../engine.js';
import { EngineRefusal } from '../engine.js';
import type { Output, StreamHub } from './hub.js';
import type { Peers } from './peers.js';
import { Pull, PullRefused } from './pull.js';

/** An edge keeps a pull this long after its last viewer left: a viewer who reloads finds it still there. */
export const PULL_LINGER_MS = 5000;
const RETRY_MS = [500, 1000, 2000, 5000];

/** What the pulls need of their engine. */
export interface PullHost {
  peers: Peers;
  scope: string;
  log(msg: string, extra?: Record<string, unknown>): void;
  parent(): ParentLink | null;
  stopped(): boolean;
  /** The stream's hub, made if there is none. */
  hubOf(stream: string): StreamHub;
  hub(stream: string): StreamHub | undefined;
  /** Ends the sessions of outputs a new source cannot feed. */
  endOutputs(orphans: readonly Output[]): void;
  /** Drops the stream's hub if nothing uses it. */
  forget(stream: string): void;
}

interface PullState {
  pull: Pull | null;
  /** The hub's feeder name of the current pull: each pull has its own, so that only it feeds the stream. */
  feeder: string;
  opening: Promise<void> | null;
  retry: NodeJS.Timeout | null;
  linger: NodeJS.Timeout | null;
  failures: number;
}

/** Which parent this is: a new credential for the same parent changes nothing. */
export const parentKey = (p: ParentLink | null) => (p ? `${p.nodeId} ${p.address} ${p.port}` : '');

const hostOf = (address: string) => (address.includes(':') && !address.startsWith('[') ? `[${address}]` : address);

export class EdgePulls {
  private readonly pulls = new Map<string, PullState>();
  /** Pulls opened so far: each one's feeder name. */
  private opened = 0;

  constructor(private readonly host: PullHost) {}

  has(stream: string): boolean {
    return this.pulls.has(stream);
  }

  private stateOf(stream: string, failures = 0): PullState {
    let st = this.pulls.get(stream);
    if (!st) this.pulls.set(stream, (st = { pull: null, feeder: '', opening: null, retry: null, linger: null, failures }));
    return st;
  }

  private viewers(stream: string): number {
    return this.host.hub(stream)?.outputCount ?? 0;
  }

  /** The stream's pull from the parent, opened if it is not (viewers of the same stream wait for the same one). */
  async ensure(stream: string): Promise<void> {
    const st = this.stateOf(stream);
    if (st.pull) return;
    st.opening ??= this.open(stream, st).finally(() => {
      st.opening = null;
    });
    await st.opening;
  }

  private async open(stream: string, st: PullState): Promise<void> {
    const parent = this.host.parent();
    if (!parent) throw new EngineRefusal(503, 'this node has no parent yet to take the stream from');
    const hub = this.host.hubOf(stream);
    const url = `http://${hostOf(parent.address)}:${parent.port}/whep/${this.host.scope}/${stream}`;
    // Its own name: a pull lost or replaced must never feed the stream beside the one after it
    // (two sources' packets interleaved reach viewers as a trickle they cannot play).
    const feeder = `pull ${++this.opened}`;
    let opened: Awaited<ReturnType<typeof Pull.open>>;
    try {
      opened = await Pull.open(
        this.host.peers,
        { url, ...(parent.credential ? { credential: parent.credential } : {}) },
        (kind, rtp) => {
          if (hub.feeder === feeder) hub.forward(kind, rtp);
        },
        (why) => this.lost(stream, feeder, why),
      );
    } catch (err) {
      st.failures++;
      if (err instanceof PullRefused && err.status === 404) throw new EngineRefusal(404, `stream '${stream}' is not published at its origin`);
      this.host.log('pull from the parent failed', { stream, parent: parent.nodeId, error: (err as Error).message });
      throw new EngineRefusal(503, `the stream could not be taken from this node's parent (${parent.nodeId})`);
    }
    if (this.pulls.get(stream) !== st || parentKey(this.host.parent()) !== parentKey(parent) || this.host.stopped()) {
      await opened.pull.close();
      throw new EngineRefusal(503, 'this node changed parents while taking the stream; try again');
    }
    st.pull = opened.pull;
    st.feeder = feeder;
    st.failures = 0;
    this.host.log('pull from the parent opened', { stream, parent: parent.nodeId });
    this.host.endOutputs(hub.feed(feeder, opened.sources));
  }

  private lost(stream: string, feeder: string, why: string): void {
    const st = this.pulls.get(stream);
    // Not the stream's current pull (one replaced or stopped before it was lost): nothing of it feeds.
    if (!st || st.feeder !== feeder) return;
    st.pull = null;
    this.host.hub(stream)?.unfeed(st.feeder);
    this.host.log('pull from the parent lost', { stream, why });
    if (this.viewers(stream) > 0) this.retry(stream, st.failures);
    else void this.stop(stream);
  }

  /** Opens the pull again in the background while the stream has viewers, waiting longer after each failure. */
  private retry(stream: string, failures: number): void {
    const st = this.stateOf(stream, failures);
    if (st.retry || this.host.stopped()) return;
    st.retry = setTimeout(
      () => {
        st.retry = null;
        if (this.viewers(stream) === 0) return void this.stop(stream);
        this.ensure(stream).catch(() => this.retry(stream, st.failures));
      },
      RETRY_MS[Math.min(failures, RETRY_MS.length - 1)],
    );
    st.retry.unref();
  }

  async stop(stream: string): Promise<void> {
    const st = this.pulls.get(stream);
    if (!st) return;
    this.pulls.delete(stream);
    if (st.retry) clearTimeout(st.retry);
    if (st.linger) clearTimeout(st.linger);
    this.host.hub(stream)?.unfeed(st.feeder);
    await st.pull?.close();
    this.host.forget(stream);
  }

  async stopAll(): Promise<void> {
    await Promise.allSettled([...this.pulls.keys()].map((s) => this.stop(s)));
  }

  /** Another parent: pulls from the old one end, those with viewers start again from the new one. */
  parentChanged(hasParent: boolean): void {
    for (const stream of [...this.pulls.keys()]) {
      const hub = this.host.hub(stream);
      void this.stop(stream).then(() => {
        if (hasParent && hub && hub.outputCount > 0) this.retry(stream, 0);
      });
    }
  }

  /** A viewer came: the pull no longer lingers. */
  keep(stream: string): void {
    const st = this.pulls.get(stream);
    if (st?.linger) {
      clearTimeout(st.linger);
      st.linger = null;
    }
  }

  /** The stream's last viewer left: its pull lingers, then goes. Whether there was a pull to linger. */
  linger(stream: string): boolean {
    const st = this.pulls.get(stream);
    if (!st) return false;
    if (!st.linger && !this.host.stopped()) {
      st.linger = setTimeout(() => {
        st.linger = null;
        if (this.viewers(stream) === 0) void this.stop(stream);
      }, PULL_LINGER_MS);
      st.linger.unref();
    }
    return true;
  }
}
