// RTP forwards of an origin's published streams: each feeds one Streaming mountpoint, on this
// node (its own viewers) or on an edge (relay.ts). A forward is kept apart from the publisher: it
// starts when a publisher's media flows (Janus's `webrtcup`), Janus drops its forwarders when the
// publisher leaves, and the next publisher of the stream feeds the same mountpoints. Forwards an
// edge asked for are leases: not renewed in time, they end (an edge killed outright stops nothing).
import { randomBytes } from 'node:crypto';
import type { JanusGateway } from './gateway.js';
import { RELAY_LEASE_MS, type RelayTarget } from './relay.js';

/** One medium a publisher sends, under Janus's mid. */
export interface PublisherMedia {
  kind: 'audio' | 'video';
  mid: string;
}

interface Publisher {
  room: number;
  feed: number;
  media: PublisherMedia[];
  /** Janus said `webrtcup`: forwarders can start. */
  up: boolean;
}

interface Forward {
  id: string;
  stream: string;
  target: RelayTarget;
  /** The node it feeds (a relay credential's subject), null for this node's own mountpoints or when unknown. */
  by: string | null;
  /** When the lease ends (ms), or null for this node's own mountpoints. */
  expiresAt: number | null;
  /** Janus's forwarder ids while they run. */
  forwarders: number[] | null;
}

export interface ForwardsOptions {
  gateway(): JanusGateway | null;
  log(msg: string, extra?: Record<string, unknown>): void;
  now?: () => number;
  leaseMs?: number;
}

/** The Janus streams of a forward: each publisher medium to the target's port of its kind, renumbered to the payload type the mountpoint there expects. */
export function forwardStreams(media: readonly PublisherMedia[], target: RelayTarget, ssrc: () => number) {
  return media.flatMap((m) => {
    const t = target.media.find((x) => x.kind === m.kind);
    return t ? [{ mid: m.mid, port: t.port, rtcpPort: t.rtcpPort, pt: t.pt, ssrc: ssrc() }] : [];
  });
}

export class Forwards {
  private readonly publishers = new Map<string, Publisher>();
  private readonly forwards = new Map<string, Forward>();
  private queue: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private readonly now: () => number;
  private readonly leaseMs: number;

  constructor(private readonly o: ForwardsOptions) {
    this.now = o.now ?? Date.now;
    this.leaseMs = o.leaseMs ?? RELAY_LEASE_MS;
  }

  /** Janus calls one at a time, in order. */
  private serial<T>(op: () => Promise<T>): Promise<T> {
    const next = this.queue.then(op, op);
    this.queue = next.catch(() => undefined);
    return next;
  }

  hasPublisher(stream: string): boolean {
    return this.publishers.has(stream);
  }

  publisherJoined(stream: string, p: Omit<Publisher, 'up'>): void {
    this.publishers.set(stream, { ...p, up: false });
    for (const f of this.forwards.values()) if (f.stream === stream) f.forwarders = null;
  }

  /** The publisher's media flows: every forward of the stream starts. */
  publisherUp(stream: string): Promise<void> {
    return this.serial(async () => {
      const p = this.publishers.get(stream);
      if (!p) return;
      p.up = true;
      for (const f of this.forwards.values()) if (f.stream === stream && f.forwarders === null) await this.startForward(f, p);
    });
  }

  /** The publisher left; Janus ended its forwarders with it. */
  publisherDown(stream: string): void {
    this.publishers.delete(stream);
    for (const f of this.forwards.values()) if (f.stream === stream) f.forwarders = null;
  }

  private async startForward(f: Forward, p: Publisher): Promise<void> {
    const gw = this.o.gateway();
    if (!gw) return;
    const streams = forwardStreams(p.media, f.target, () => randomBytes(4).readUInt32BE(0) || 1);
    if (streams.length === 0) return;
    try {
      f.forwarders = await gw.rtpForward(p.room, p.feed, f.target.host, streams);
      this.o.log('forwarding', { stream: f.stream, to: f.target.host, media: streams.map((s) => s.mid) });
    } catch (err) {
      this.o.log('could not forward', { stream: f.stream, to: f.target.host, error: (err as Error).message });
    }
  }

  /** A new forward; started now if the stream's media flows. Its id. */
  add(stream: string, target: RelayTarget, options: { lease: boolean; by?: string | null }): Promise<string> {
    return this.serial(async () => {
      const f: Forward = {
        id: randomBytes(12).toString('base64url'),
        stream,
        target,
        by: options.by ?? null,
        expiresAt: options.lease ? this.now() + this.leaseMs : null,
        forwarders: null,
      };
      this.forwards.set(f.id, f);
      const p = this.publishers.get(stream);
      if (p?.up) await this.startForward(f, p);
      return f.id;
    });
  }

  renew(stream: string, id: string): boolean {
    const f = this.forwards.get(id);
    if (!f || f.stream !== stream) return false;
    if (f.expiresAt !== null) f.expiresAt = this.now() + this.leaseMs;
    return true;
  }

  remove(stream: string, id: string): Promise<boolean> {
    return this.serial(async () => {
      const f = this.forwards.get(id);
      if (!f || f.stream !== stream) return false;
      this.forwards.delete(id);
      await this.stopForward(f);
      return true;
    });
  }

  private async stopForward(f: Forward): Promise<void> {
    const p = this.publishers.get(f.stream);
    const ids = f.forwarders;
    f.forwarders = null;
    const gw = this.o.gateway();
    if (!p || !ids || !gw) return;
    for (const streamId of ids) await gw.stopRtpForward(p.room, p.feed, streamId).catch(() => undefined);
  }

  /** Ends leases not renewed in time. */
  expire(): Promise<void> {
    return this.serial(async () => {
      const now = this.now();
      for (const f of [...this.forwards.values()]) {
        if (f.expiresAt === null || f.expiresAt > now) continue;
        this.forwards.delete(f.id);
        await this.stopForward(f);
        this.o.log('forward lease ended', { stream: f.stream, to: f.target.host });
      }
    });
  }

  startExpiry(): void {
    this.timer = setInterval(() => void this.expire(), this.leaseMs / 3);
    this.timer.unref();
  }

  stopExpiry(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Janus restarted: nothing it held is left. */
  clear(): void {
    this.publishers.clear();
    this.forwards.clear();
  }

  /** Per stream, the nodes fed by a lease (edges under this node), by their id or else the address fed. */
  children(): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    for (const f of this.forwards.values()) {
      if (f.expiresAt === null) continue;
      const set = out.get(f.stream) ?? new Set<string>();
      set.add(f.by ?? f.target.host);
      out.set(f.stream, set);
    }
    return out;
  }
}
