// Where clients and peers reach a node: the address clients are given, the address another node
// pulls from, and the listener a client connects to (docs/nodes.md, docs/api.md). Pure functions
// of a node's record and the group's config; owns no state.
import type { NodeGroup } from '../config/types.js';
import type { Listener, NodeRecord } from '../domain/records.js';
import type { Role } from '../domain/vocabulary.js';

/** The listener answered when neither the node nor its role names one. */
const DEFAULT_LISTENER: Listener = { protocol: 'rtmp', port: 1935 };

/** A lookup's answer: the node a client is sent to, and where it connects. */
export interface Assignment {
  nodeId: string;
  role: Role;
  region: string;
  serverAddress: string;
  listener: Listener;
}

/**
 * The host clients are sent to. The addresses an operator's platform knows (the static config,
 * Terraform's output, the local loopback address) win over what a node's heartbeat says: a node
 * token alone must not be able to send a group's clients elsewhere (security audit). A group
 * whose nodes sit behind NAT sets `platform.trustNodeAddress`, and then the public address a node
 * declares comes first. A node's own private (bind) address is the last resort either way.
 */
export const nodeAddress = (n: NodeRecord, trustNode: boolean): string | null =>
  (trustNode ? (n.address?.public ?? n.platform.address) : (n.platform.address ?? n.address?.public)) ?? n.address?.private ?? null;

/**
 * Where one node reaches another (an edge its parent, a transcoder its origin): inside a region
 * the private address, so that pulls stay in the network (and within security groups that only
 * open media ports there); across regions the address clients are given. Without trust in the
 * nodes' word, a private address the platform knows wins, and a platform that knows only one
 * address is believed for both.
 */
export const peerAddress = (from: NodeRecord, to: NodeRecord, trustNode: boolean): string | null => {
  if (from.region !== to.region) return nodeAddress(to, trustNode);
  const platformPrivate = to.platform.type === 'terraform' ? to.platform.privateAddress : undefined;
  if (trustNode) return to.address?.private ?? platformPrivate ?? nodeAddress(to, true);
  return platformPrivate ?? to.platform.address ?? to.address?.private ?? nodeAddress(to, false);
};

/** The node and the listener its client uses: players the subscribe one, publishers the publish one. */
export function assignmentOf(r: NodeRecord, group: NodeGroup, forViewers: boolean): Assignment {
  const configured = group.roles[r.role];
  // Endpoints 4 and 5 always name a listener (docs/api.md): what the node reports, else what its
  // role configures, else RTMP on 1935, where media servers listen unless told otherwise.
  const listener = (forViewers ? (r.listeners?.subscribe ?? configured?.subscribe ?? r.listeners?.publish ?? configured?.publish) : (r.listeners?.publish ?? configured?.publish)) ?? DEFAULT_LISTENER;
  return { nodeId: r.id, role: r.role, region: r.region, serverAddress: nodeAddress(r, group.platform.trustNodeAddress) ?? '', listener };
}
