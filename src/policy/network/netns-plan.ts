// Where a local Janus node's own network lives (docs/webrtc.md, "Janus: what runs where"): Janus never
// gathers ICE candidates on a loopback interface and pins each media socket to its interface, so
// a node on this machine gets a network namespace with a veth pair whose other end sits on one
// bridge in the root namespace. The bridge is one layer-2 segment: the root namespace (agents,
// the control plane, clients) reaches every node at its address, and nodes reach each other (RTP
// forwarding) without the root namespace routing anything. Pure: names and addresses from the
// node id, its loopback address and the subnet; src/os/netns.ts makes and removes them.
import { createHash } from 'node:crypto';
import { intToIp, ipToInt, isIPv4 } from './ipv4.js';

export interface NetnsPlan {
  /** The network namespace (`ip netns`). */
  namespace: string;
  /** The veth end in the root namespace, enslaved to the bridge. */
  hostLink: string;
  /** The veth end inside the namespace, which carries the node's address. */
  nodeLink: string;
  /** The bridge in the root namespace, shared by every node of the subnet. */
  bridge: string;
  /** The bridge's address: the nodes' default gateway, and the root namespace's address on the segment. */
  bridgeAddress: string;
  /** The node's address inside its namespace. */
  address: string;
  prefix: number;
}

export class NetnsPlanError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NetnsPlanError';
  }
}

/** Every name made here starts so (interface names are at most 15 characters). */
export const NETNS_PREFIX = 'sy';

/** `a.b.c.d/p`, a private IPv4 network of 8 to 24 prefix bits whose host bits are zero. */
export function parseSubnet(subnet: string): { base: number; prefix: number } {
  const m = /^([0-9.]+)\/([0-9]{1,2})$/.exec(subnet);
  if (!m || !isIPv4(m[1]!)) throw new NetnsPlanError(`subnet ${JSON.stringify(subnet)} is not an IPv4 subnet (a.b.c.d/p)`);
  const prefix = Number(m[2]);
  if (prefix < 8 || prefix > 24) throw new NetnsPlanError(`subnet ${subnet}: the prefix must be 8 to 24 bits`);
  const base = ipToInt(m[1]!);
  if (base % 2 ** (32 - prefix) !== 0) throw new NetnsPlanError(`subnet ${subnet}: host bits are set (the network is ${intToIp(base - (base % 2 ** (32 - prefix)))}/${prefix})`);
  return { base, prefix };
}

/** A short, stable tag of a name: eight hex digits of its SHA-256. */
const tag = (s: string) => createHash('sha256').update(s).digest('hex').slice(0, 8);

/** The bridge of a subnet: every node of one subnet shares it, another subnet gets another. */
export function bridgeName(subnet: string): string {
  const { base, prefix } = parseSubnet(subnet);
  return `${NETNS_PREFIX}b${base.toString(16).padStart(8, '0')}${prefix}`;
}

/**
 * A node's namespace, links and address. The address is the node's loopback address's low bits
 * in the subnet (127.0.0.5 → 10.213.0.5 in 10.213.0.0/16): loopback addresses are distinct per
 * node already (the local platform hands them out), so addresses are too, and a restarted node
 * finds the same ones. Names come from the node id, so a new start of the node reclaims what a
 * killed one left.
 */
export function netnsPlan(nodeId: string, loopbackAddress: string, subnet: string): NetnsPlan {
  const { base, prefix } = parseSubnet(subnet);
  if (!isIPv4(loopbackAddress)) throw new NetnsPlanError(`${JSON.stringify(loopbackAddress)} is not an IPv4 address`);
  const size = 2 ** (32 - prefix);
  const host = ipToInt(loopbackAddress) % size;
  // .0 is the network, .1 the bridge, the last the broadcast.
  if (host < 2 || host === size - 1) {
    throw new NetnsPlanError(`node address ${loopbackAddress} maps to ${intToIp(base + host)}, which ${subnet} reserves (network, bridge or broadcast): use another loopback address`);
  }
  const t = tag(nodeId);
  return {
    namespace: `${NETNS_PREFIX}n-${t}`,
    hostLink: `${NETNS_PREFIX}${t}h`,
    nodeLink: `${NETNS_PREFIX}${t}n`,
    bridge: bridgeName(subnet),
    bridgeAddress: intToIp(base + 1),
    address: intToIp(base + host),
    prefix,
  };
}
