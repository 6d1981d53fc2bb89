// The edges that carry each stream: those that listed it in their last heartbeat, and those just
// handed its viewers (the edge's `pending`, until its next heartbeat says). Owns that index, a
// few edges per stream at most, so an array each. Subscribe lookups send viewers to an edge that
// already pulls the stream (docs/choosing-nodes.md), and stream views list these edges.
import type { LiveNode } from './nodes.js';

export class ServingEdges {
  private readonly byStream = new Map<string, LiveNode[]>();

  of(stream: string): readonly LiveNode[] | undefined {
    return this.byStream.get(stream);
  }

  /** The edge was just handed viewers of the stream: it carries it, as far as lookups know, until its next heartbeat. */
  serve(edge: LiveNode, stream: string): void {
    const serving = this.byStream.get(stream);
    if (!serving) this.byStream.set(stream, [edge]);
    else if (!serving.includes(edge)) serving.push(edge);
    else return;
    edge.pending.add(stream);
  }

  private unserve(node: LiveNode, stream: string): void {
    const serving = this.byStream.get(stream);
    if (!serving) return;
    const i = serving.indexOf(node);
    if (i >= 0) serving.splice(i, 1);
    if (serving.length === 0) this.byStream.delete(stream);
  }

  /**
   * An edge's heartbeat listed `seen`: the heartbeat is the truth, so streams handed out since
   * the last one are either in it now or gone. Called before node.streams becomes `seen`.
   */
  reported(edge: LiveNode, seen: ReadonlyMap<string, number>): void {
    for (const stream of edge.pending) if (!seen.has(stream)) this.unserve(edge, stream);
    edge.pending.clear();
    for (const stream of edge.streams.keys()) if (!seen.has(stream)) this.unserve(edge, stream);
    for (const stream of seen.keys()) {
      const serving = this.byStream.get(stream);
      if (!serving) this.byStream.set(stream, [edge]);
      else if (!serving.includes(edge)) serving.push(edge);
    }
  }

  /** The node left the group: it carries nothing. */
  nodeRemoved(node: LiveNode): void {
    for (const stream of [...node.streams.keys(), ...node.pending]) this.unserve(node, stream);
  }
}
