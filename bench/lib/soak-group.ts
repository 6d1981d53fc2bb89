// What the soak runs against: the static node group `soak` (4 origins, 12 edges, 2 regions, agents
// heartbeating every second), the spec of any node group it creates through the API (the churn's
// use the same roles, rules and timing), the live streams it keeps published, and the service's
// config file.
import type { NodeSpec } from './fleet.js';

export const GROUP = 'soak';
export const REGIONS = [
  { name: 'r1', lat: 50.1, lon: 8.7 },
  { name: 'r2', lat: 40.7, lon: -74 },
];
export const TIMING = { heartbeatMs: 1000, nodeTimeout: '5s', streamTimeout: '15s', publishTimeout: '20s' };
/** TIMING.nodeTimeout in ms: how long a silenced agent's node takes to go FAULT. */
export const NODE_TIMEOUT_MS = 5000;
const ROLES = { origin: { publish: { protocol: 'rtmp', port: 1935 } }, edge: { parentRole: 'origin', subscribe: { protocol: 'wss', port: 443 } } };
export const NODES: NodeSpec[] = [
  ...Array.from({ length: 4 }, (_, i) => ({ id: `o${i}`, role: 'origin' as const, region: REGIONS[i % 2]!.name })),
  ...Array.from({ length: 12 }, (_, i) => ({ id: `e${i}`, role: 'edge' as const, region: REGIONS[i % 2]!.name })),
];
/** Live streams at any time, and how long each is published. */
export const LIVE_STREAMS = 8;
export const LIVE_MS: [number, number] = [20_000, 60_000];

/** A static node group of `nodes`, addressed in 10.`net`.0.0/16. */
export function groupSpec(name: string, nodes: readonly NodeSpec[], regions: typeof REGIONS, net: number) {
  return {
    name,
    platform: { type: 'static', static: { nodes: nodes.map((n, i) => ({ ...n, address: `10.${net}.${i >> 8}.${i & 255}` })) } },
    regions,
    roles: ROLES,
    rules: regions.flatMap((r) => [
      { region: r.name, role: 'origin', min: 0, max: 64, limit: 1e12 },
      { region: r.name, role: 'edge', min: 0, max: 64, limit: 1e12 },
    ]),
    timing: TIMING,
    // The soak's load generator is one token publishing thousands of streams a second.
    limits: { pendingBindings: 10_000_000, pendingPerToken: 10_000_000 },
  };
}

/** The service's settings: the soak group, and no lookup rate limit for the load generator's admin token. */
export function soakSettings() {
  return { auth: { tokenTtl: '24h' }, limits: { lookups: { admin: { perSecond: 0, burst: 1 } } }, nodeGroups: [groupSpec(GROUP, NODES, REGIONS, 1)] };
}
