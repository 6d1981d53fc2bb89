// The Janus engine of a node agent, from its environment (docs/webrtc.md, "Janus nodes"):
//   SWITCHYARD_JANUS_SUBNET         set by the local platform: Janus runs in a namespace of its own on this subnet
//   SWITCHYARD_JANUS_MEDIA_ADDRESS  otherwise (a real host): the NIC address of ICE and media (default: the node's address)
//   SWITCHYARD_JANUS_BIN            the janus program (default: janus on PATH)
//   SWITCHYARD_JANUS_LIB_DIR        Janus's plugins and transports (default: Debian's multiarch folder)
//   SWITCHYARD_JANUS_STUN           a STUN server host:port, for a node that must learn its public address
//   SWITCHYARD_NODE_PUBLIC_ADDRESS  Janus's nat_1_1_mapping (a host behind a 1:1 NAT)
import type { Role } from '../../../domain/vocabulary.js';
import { netnsPlan, parseSubnet } from '../../../policy/network/netns-plan.js';
import { findProgram } from '../../../os/programs.js';
import type { AdmissionGate } from '../../admission/gate.js';
import { DEFAULT_JANUS_LIB_DIR } from './config.js';
import { JanusEngine } from './engine.js';
import { RelayClient } from './relay.js';
import { JanusRuntime, type JanusNetwork } from './runtime.js';

export interface JanusAgentConfig {
  nodeId: string;
  role: Role;
  /** The agent's address (a loopback address on the local platform). */
  address: string;
  publicAddress: string | undefined;
  /** The node's directory: Janus's config, log and pid file, the namespace record. */
  dir: string;
  /** ICE's UDP ports (SWITCHYARD_WEBRTC_PORT_RANGE; default 20000-29999). */
  icePorts: [number, number] | undefined;
  gate: AdmissionGate;
  log(msg: string, extra?: Record<string, unknown>): void;
}

export function janusEngineFromEnv(c: JanusAgentConfig, env: NodeJS.ProcessEnv): JanusEngine {
  const subnetText = env.SWITCHYARD_JANUS_SUBNET;
  const subnet = subnetText ? parseSubnet(subnetText) : null;
  const network: JanusNetwork = subnetText
    ? { kind: 'netns', plan: netnsPlan(c.nodeId, c.address, subnetText) }
    : { kind: 'host', mediaAddress: env.SWITCHYARD_JANUS_MEDIA_ADDRESS || c.address, controlAddress: '127.0.0.1' };
  const bin = env.SWITCHYARD_JANUS_BIN || 'janus';
  const runtime = new JanusRuntime({
    nodeId: c.nodeId,
    dir: c.dir,
    binary: bin.includes('/') ? bin : (findProgram(bin, env) ?? bin),
    libDir: env.SWITCHYARD_JANUS_LIB_DIR || DEFAULT_JANUS_LIB_DIR,
    network,
    ...(c.publicAddress ? { publicAddress: c.publicAddress } : {}),
    ...(env.SWITCHYARD_JANUS_STUN ? { stunServer: env.SWITCHYARD_JANUS_STUN } : {}),
    ...(c.icePorts ? { icePorts: c.icePorts } : {}),
    log: c.log,
  });
  return new JanusEngine({ role: c.role, runtime, relays: new RelayClient(), gate: c.gate, subnet, log: c.log });
}
