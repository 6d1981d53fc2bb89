// A node's heartbeat applied (docs/nodes.md), the other hot path: its metrics (the load its pool
// orders it by), its addresses and listeners, the state it moves to (a first ready heartbeat puts
// it in service), the streams it lists (bindings turn LIVE, subscriber counts, the edges that
// carry them), and the reply: its parent, whether to drain, and a transcoder's jobs. Owns no
// state of its own: it changes what nodes.ts, bindings.ts and serving.ts own, through them.
import { capabilitiesOf } from '../platforms/capabilities.js';
import type { Heartbeat, HeartbeatReply as HeartbeatReplyMessage, TranscodeJob } from '../schemas/heartbeat.js';
import { TOLD_TO_DRAIN, transition } from '../policy/states.js';
import { assignmentOf, peerAddress } from './addresses.js';
import type { Bindings } from './bindings.js';
import type { EffectLog } from './effects.js';
import type { NodeLifecycle } from './lifecycle.js';
import type { LiveNode, Nodes } from './nodes.js';
import type { Provisions } from './provisions.js';
import type { ServingEdges } from './serving.js';
import { mediaOf } from './stream-stats.js';
import type { Settings } from './settings.js';
import type { ParentTree } from './tree.js';

/** The heartbeat as the model applies it, and its reply: declared once, in src/schemas/heartbeat.ts. */
export type HeartbeatInput = Heartbeat;
export type HeartbeatReply = Omit<HeartbeatReplyMessage, 'token'>;

export class Heartbeats {
  constructor(
    private readonly settings: Settings,
    private readonly nodes: Nodes,
    private readonly tree: ParentTree,
    private readonly bindings: Bindings,
    private readonly provisions: Provisions,
    private readonly serving: ServingEdges,
    private readonly lifecycle: NodeLifecycle,
    private readonly effects: EffectLog,
  ) {}

  /** The node's reply; null for a node the group does not have. */
  apply(id: string, hb: HeartbeatInput, now: number): HeartbeatReply | null {
    const node = this.nodes.get(id);
    if (!node) return null;
    const group = this.settings.group;
    node.lastSeen = now;
    node.metrics = hb.metrics;
    node.assigned = 0;
    node.problem = hb.ready ? null : (hb.problem ?? null);
    const record = node.record;
    let dirty = false;
    // The node's report is its whole view of itself: a public address it no longer declares goes
    // (the platform's own record of the node's addresses is kept apart, in record.platform).
    if (hb.address && (hb.address.public !== record.address?.public || hb.address.private !== record.address?.private)) {
      record.address = hb.address;
      dirty = true;
    }
    if (hb.listeners && JSON.stringify(hb.listeners) !== JSON.stringify(record.listeners ?? {})) {
      record.listeners = hb.listeners;
      dirty = true;
    }
    const autoReinstate = group.timing.autoReinstate || capabilitiesOf(record.platform.type).alwaysReinstates;
    // A first heartbeat that is ready makes two moves (CREATED → STARTED → INSERVICE), each an event.
    const event = { type: 'heartbeat' as const, ready: hb.ready, autoReinstate, ...(record.faultedFrom ? { resume: record.faultedFrom.state } : {}) };
    let moved = false;
    for (let i = 0; i < 2; i++) {
      const t = transition(record.state, event);
      if (!t.ok || t.state === null || t.state === record.state) break;
      const why =
        record.state === 'FAULT' ? 'heartbeats resumed' : t.state === 'STARTED' && hb.ready ? 'first heartbeat' : hb.ready ? 'ready' : node.problem ? `not ready: ${node.problem}` : 'heartbeat';
      this.lifecycle.setState(node, t.state, now, why);
      moved = true;
    }
    if (!moved && dirty) this.effects.write('node', id, record);
    const drop = this.observeStreams(node, hb.streams ?? [], now);
    if (this.tree.needsParent(node)) this.tree.attach(node, now, 'no parent');
    this.tree.refresh(node);
    const parent = record.parent ? this.nodes.get(record.parent) : undefined;
    return {
      heartbeatMs: group.timing.heartbeatMs,
      parent: parent ? { nodeId: parent.id, address: peerAddress(record, parent.record, this.settings.trustNodes) ?? '', ...(parent.record.listeners?.subscribe ?? {}) } : null,
      drain: TOLD_TO_DRAIN.has(record.state),
      ...(record.role === 'transcoder' ? { transcode: this.jobsOf(node) } : {}),
      ...(drop.length > 0 ? { drop: { at: now, streams: drop } } : {}),
    };
  }

  /** What a transcoder is to make: each stream bound to it, from its origin, into its provision's renditions. */
  private jobsOf(transcoder: LiveNode): TranscodeJob[] {
    const jobs: TranscodeJob[] = [];
    for (const stream of this.bindings.boundToNode(transcoder.id) ?? []) {
      const b = this.bindings.get(stream);
      const origin = b ? this.nodes.get(b.origin) : undefined;
      const provision = this.provisions.get(stream);
      if (!b || b.transcoder !== transcoder.id || !origin || !provision) continue;
      const a = assignmentOf(origin.record, this.settings.group, origin.record.role === 'edge');
      jobs.push({
        stream,
        origin: { nodeId: origin.id, address: peerAddress(transcoder.record, origin.record, this.settings.trustNodes) ?? '', port: a.listener.port, protocol: a.listener.protocol },
        renditions: provision.streams,
      });
    }
    return jobs;
  }

  /** Takes in what the node lists; answers the streams whose publishers it must drop (admission: not bound there). */
  private observeStreams(node: LiveNode, streams: NonNullable<HeartbeatInput['streams']>, now: number): string[] {
    const seen = new Map<string, number>();
    const drop: string[] = [];
    const role = node.record.role;
    // Viewers are counted where they are served: on edges, or on origins in a group without
    // edges. An origin's subscribers are otherwise the edges and relays pulling from it.
    const servesViewers = role === 'edge' || (role === 'origin' && !this.settings.group.roles.edge);
    // docs/choosing-nodes.md: a binding turns LIVE when the origin lists the stream. An agent that leaves the
    // flag out is read by its role: what an origin or a transcoder lists is being published there.
    const ingests = role === 'origin' || role === 'transcoder';
    node.media = mediaOf(streams);
    for (const s of streams) {
      const stream = this.provisions.streamOf(s.name);
      seen.set(stream, (seen.get(stream) ?? 0) + (servesViewers ? (s.subscribers ?? 0) : 0));
      if ((s.publishing ?? ingests) && !this.bindings.published(stream, node, now)) drop.push(s.name);
    }
    // Keep each binding's subscriber count as the sum over the nodes that report it.
    for (const [stream, before] of node.streams) {
      if (!seen.has(stream)) {
        const b = this.bindings.get(stream);
        if (b) b.subscribers = Math.max(0, b.subscribers - before);
      }
    }
    for (const [stream, count] of seen) {
      const b = this.bindings.get(stream);
      if (b) b.subscribers = Math.max(0, b.subscribers + count - (node.streams.get(stream) ?? 0));
    }
    if (role === 'edge') this.serving.reported(node, seen);
    node.streams = seen;
    return drop;
  }
}
