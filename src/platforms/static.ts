// Fixed fleets: the nodes are listed in the config and run their own node agents. Nothing is ever
// created or destroyed here; the supervisor only watches them.
import type { NodeGroup } from '../config/types.js';
import type { PlatformData } from '../domain/records.js';
import { PlatformError, type NewNode, type NodeRef, type Platform } from './platform.js';

export class StaticPlatform implements Platform {
  readonly type = 'static' as const;

  prepare(group: NodeGroup, node: NewNode): PlatformData {
    const listed = group.platform.static.nodes.find((n) => n.id === node.id);
    if (!listed) throw new PlatformError(`node ${node.id} is not listed in node group ${group.name}'s static nodes`, false);
    return { type: 'static', address: listed.address };
  }

  async create(_group: NodeGroup, node: NodeRef): Promise<PlatformData> {
    return node.platform;
  }

  async destroy(): Promise<void> {}

  exists(): boolean {
    return true;
  }

  async shutdown(): Promise<void> {}
}
