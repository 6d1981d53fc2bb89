// Fixed fleets: the nodes are listed in the config and run their own node agents. Nothing is ever
// created or destroyed here; the supervisor only watches them.
import type { NodeGroup } from '../config/types.js';
import type { PlatformData } from '../domain/records.js';
import { capabilitiesOf } from '../domain/capabilities.js';
import { PlatformError, type NewNode, type NodeRef, type Platform, type Reconciliation } from './platform.js';

export class StaticPlatform implements Platform {
  readonly capabilities = capabilitiesOf('static');

  prepare(group: NodeGroup, node: NewNode): PlatformData {
    const listed = group.platform.static.nodes.find((n) => n.id === node.id);
    if (!listed) throw new PlatformError(`node ${node.id} is not listed in node group ${group.name}'s static nodes`);
    return { type: 'static', address: listed.address };
  }

  async create(_group: NodeGroup, node: NodeRef): Promise<PlatformData> {
    return node.platform;
  }

  async destroy(): Promise<void> {}

  /** The config is the fleet: nodes it lists are recorded (CREATED: their agents report), nodes it no longer lists retire. */
  async reconcile(group: NodeGroup, nodes: readonly NodeRef[]): Promise<Reconciliation> {
    const known = new Set(nodes.map((n) => n.id));
    const configured = group.platform.static.nodes;
    const inConfig = new Set(configured.map((n) => n.id));
    return {
      listed: configured.filter((n) => !known.has(n.id)).map((n) => ({ id: n.id, role: n.role, region: n.region, platform: { type: 'static', address: n.address }, state: 'CREATED' })),
      missing: [],
      retired: nodes.filter((n) => !inConfig.has(n.id)).map((n) => n.id),
      orphans: [],
    };
  }

  async removeOrphan(): Promise<void> {}

  async shutdown(): Promise<void> {}

  reconfigure(): void {}
}
