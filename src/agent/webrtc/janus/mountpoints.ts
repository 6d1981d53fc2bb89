// The Streaming mountpoints viewers of a node watch, and what feeds each: a
// forward of the node's own VideoRoom room (an origin: forwards.ts), or one its parent's agent
// keeps for it (an edge: relay.ts). One per stream and payload types: Janus 1.1.2 sends viewers
// the numbers it offered, and the bridge (sdp.ts) cannot renumber, so a mountpoint is made with the
// numbers its viewers offered VP8 and Opus under (Chrome 96/111, Firefox 120/109, werift 98/96) and
// the forward feeding it renumbers to them. A mountpoint is made for its first viewer and goes with
// its last. An edge renews its parent's forwards, asks again for one its parent forgot, and moves every
// mountpoint to a new parent without dropping its viewers (the new forward first, then the old one
// let go; from the same parent never two at once).
import type { Role } from '../../../domain/vocabulary.js';
import { EngineRefusal, type ParentLink } from '../engine.js';
import type { Forwards } from './forwards.js';
import type { JanusGateway, MountpointPorts, RtpMedia } from './gateway.js';
import { RELAY_LEASE_MS, type RelayClient, type RelayTarget } from './relay.js';

/** The payload types a mountpoint sends VP8 and Opus under; null for a medium it does not carry. */
export interface PayloadTypes {
  video: number | null;
  audio: number | null;
}

/** What a mountpoint carries: VP8 (mid `v`) and Opus (mid `a`), under the viewers' numbers. */
export function mountpointMedia(pts: PayloadTypes): RtpMedia[] {
  return [
    ...(pts.video !== null ? [{ kind: 'video' as const, mid: 'v', pt: pts.video, codec: 'vp8' as const }] : []),
    ...(pts.audio !== null ? [{ kind: 'audio' as const, mid: 'a', pt: pts.audio, codec: 'opus' as const }] : []),
  ];
}

const keyOf = (stream: string, pts: PayloadTypes) => `${stream}/${pts.video ?? '-'}/${pts.audio ?? '-'}`;

type Feed = { kind: 'local'; forward: string } | { kind: 'parent'; parent: ParentLink; forward: string };

export interface Mountpoint {
  id: number;
  stream: string;
  media: RtpMedia[];
  ports: MountpointPorts[];
  viewers: Set<string>;
  feed: Feed | null;
}

export interface MountpointsOptions {
  role: Role;
  /** The address the node's Janus receives forwarded RTP on. */
  mediaAddress: () => string;
  gateway: () => JanusGateway | null;
  forwards: Forwards;
  relays: RelayClient;
  /** Janus's ids for rooms and mountpoints, shared with the engine's rooms. */
  nextId: () => number;
  log(msg: string, extra?: Record<string, unknown>): void;
}

export class Mountpoints {
  /** Per stream and payload types; a promise, so that viewers arriving at once share one setup. */
  private readonly byStream = new Map<string, Promise<Mountpoint>>();
  private parent: ParentLink | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly o: MountpointsOptions) {}

  private target(mp: Pick<Mountpoint, 'media' | 'ports'>): RelayTarget {
    return {
      host: this.o.mediaAddress(),
      media: mp.ports.map(({ kind, port, rtcpPort }) => ({ kind, port, rtcpPort, pt: mp.media.find((m) => m.kind === kind)!.pt })),
    };
  }

  /**
   * The mountpoint of a stream under these payload types, made and fed if it is not there yet, with
   * `viewer` counted (so that it is not torn down under a viewer being set up). Its key, for leave().
   */
  async join(gw: JanusGateway, stream: string, pts: PayloadTypes, viewer: string): Promise<{ mountpoint: Mountpoint; key: string }> {
    const key = keyOf(stream, pts);
    let pending = this.byStream.get(key);
    if (!pending) {
      const made = this.make(gw, stream, mountpointMedia(pts));
      pending = made;
      this.byStream.set(key, made);
      made.catch(() => {
        if (this.byStream.get(key) === made) this.byStream.delete(key);
      });
    }
    const mountpoint = await pending;
    mountpoint.viewers.add(viewer);
    return { mountpoint, key };
  }

  private async make(gw: JanusGateway, stream: string, media: RtpMedia[]): Promise<Mountpoint> {
    const local = this.o.role === 'origin';
    if (local && !this.o.forwards.hasPublisher(stream)) throw new EngineRefusal(404, `${stream} is not published here`);
    const parent = this.parent;
    if (!local && !parent) throw new EngineRefusal(503, 'this edge has no parent yet: try again in a moment');
    const id = this.o.nextId();
    const ports = await gw.createMountpoint(id, media);
    const mp: Mountpoint = { id, stream, media, ports, viewers: new Set(), feed: null };
    try {
      mp.feed = local
        ? { kind: 'local', forward: await this.o.forwards.add(stream, this.target(mp), { lease: false }) }
        : { kind: 'parent', parent: parent!, forward: await this.o.relays.forward(parent!, stream, this.target(mp)) };
    } catch (err) {
      await gw.destroyMountpoint(id).catch(() => undefined);
      throw err;
    }
    this.o.log('mountpoint fed', { stream, mountpoint: id, from: local ? 'this node' : parent!.nodeId });
    return mp;
  }

  /** A viewer left (`key` from join): the last one takes the mountpoint and its feed along. */
  async leave(key: string, viewer: string): Promise<void> {
    const pending = this.byStream.get(key);
    if (!pending) return;
    const mp = await pending.catch(() => null);
    if (!mp?.viewers.delete(viewer) || mp.viewers.size > 0) return;
    if (this.byStream.get(key) === pending) this.byStream.delete(key);
    const stream = mp.stream;
    await this.release(stream, mp);
    await this.o
      .gateway()
      ?.destroyMountpoint(mp.id)
      .catch(() => undefined);
    this.o.log('mountpoint ended', { stream, mountpoint: mp.id });
  }

  private async release(stream: string, mp: Mountpoint): Promise<void> {
    const feed = mp.feed;
    mp.feed = null;
    if (feed?.kind === 'local') await this.o.forwards.remove(stream, feed.forward);
    if (feed?.kind === 'parent') await this.o.relays.release(feed.parent, stream, feed.forward);
  }

  setParent(parent: ParentLink | null): void {
    const before = this.parent;
    const same = before?.nodeId === parent?.nodeId && before?.address === parent?.address && before?.port === parent?.port;
    this.parent = parent;
    if (same || !parent || this.o.role === 'origin') return;
    void this.each((stream, mp) => this.refeed(stream, mp, parent));
  }

  private async each(op: (stream: string, mp: Mountpoint) => Promise<void>): Promise<void> {
    for (const pending of [...this.byStream.values()]) {
      const mp = await pending.catch(() => null);
      if (mp && mp.feed?.kind !== 'local') await op(mp.stream, mp);
    }
  }

  private async refeed(stream: string, mp: Mountpoint, parent: ParentLink): Promise<void> {
    const old = mp.feed?.kind === 'parent' ? mp.feed : null;
    // From the same parent never two forwards at once: the mountpoint would get the stream twice.
    if (old && old.parent.nodeId === parent.nodeId) await this.release(stream, mp);
    try {
      mp.feed = { kind: 'parent', parent, forward: await this.o.relays.forward(parent, stream, this.target(mp)) };
      this.o.log('mountpoint fed', { stream, mountpoint: mp.id, from: parent.nodeId });
    } catch (err) {
      this.o.log('could not feed a mountpoint from the parent', { stream, parent: parent.nodeId, error: (err as Error).message });
    }
    if (old && old.parent.nodeId !== parent.nodeId) {
      await this.o.relays.release(old.parent, stream, old.forward);
      if (mp.feed === old) mp.feed = null;
    }
  }

  /** Renews the parent's forwards; one it forgot (it restarted), or one not had, is asked for again. */
  private async renew(): Promise<void> {
    await this.each(async (stream, mp) => {
      if (mp.feed?.kind === 'parent' && (await this.o.relays.renew(mp.feed.parent, stream, mp.feed.forward))) return;
      if (this.parent) await this.refeed(stream, mp, this.parent);
    });
  }

  /** Forwards the parent keeps are leases: renewed at a third of their life. */
  startRenewal(): void {
    if (this.o.role === 'origin') return;
    this.timer = setInterval(() => void this.renew(), RELAY_LEASE_MS / 3);
    this.timer.unref();
  }

  stopRenewal(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Janus restarted: nothing it held is left. */
  clear(): void {
    this.byStream.clear();
  }
}
