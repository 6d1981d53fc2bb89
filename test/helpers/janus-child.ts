// A stand-in for a Janus node's agent, in a process of its own, for the kill -9 tests: starts the
// node's Janus runtime (namespace, Janus) in the directory given and says `ready`; it is then
// killed outright by the test, leaving Janus and the namespace behind as a killed agent would.
import { JanusRuntime } from '../../src/agent/webrtc/janus/runtime.js';
import { netnsPlan } from '../../src/policy/network/netns-plan.js';
import { findProgram } from '../../src/os/programs.js';
import { JANUS_SUBNET } from './janus.js';

const [dir, nodeId, loopback] = process.argv.slice(2) as [string, string, string];
const runtime = new JanusRuntime({ nodeId, dir, binary: findProgram('janus') ?? 'janus', network: { kind: 'netns', plan: netnsPlan(nodeId, loopback, JANUS_SUBNET) }, log: () => undefined });
await runtime.start();
process.send!(runtime.problem === null ? { ready: runtime.pid } : { problem: runtime.problem });
