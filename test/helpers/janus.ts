// Janus nodes for tests, without the control plane: a runtime (Janus in a namespace of its own on
// 10.213.0.0/16, the Janus tests' range), the engine that drives it, and the agent's WHIP/WHEP
// endpoints in front of it on the node's loopback address (127.5.x.y, the Janus tests' range).
// Stopped at teardown, and whatever a test leaves of their namespaces and links is listed by
// leftovers().
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { AdmissionGate } from '../../src/agent/admission/gate.js';
import { WebRtcEndpoints } from '../../src/agent/webrtc/endpoints.js';
import type { ParentLink } from '../../src/agent/webrtc/engine.js';
import { JanusEngine } from '../../src/agent/webrtc/janus/engine.js';
import { RelayClient } from '../../src/agent/webrtc/janus/relay.js';
import { JanusRuntime } from '../../src/agent/webrtc/janus/runtime.js';
import type { Role } from '../../src/domain/vocabulary.js';
import { netnsPlan, parseSubnet, type NetnsPlan } from '../../src/policy/network/netns-plan.js';
import { findProgram } from '../../src/os/programs.js';

export const JANUS_SUBNET = '10.213.0.0/16';
/** The root namespace's address on the nodes' segment: what test clients offer. */
export const CLIENT_ADDRESS = '10.213.0.1';

/** Janus and ffmpeg, or a clear failure (not a skip). */
export function janusTools(): { janus: string; ffmpeg: string } {
  const janus = findProgram('janus');
  const ffmpeg = findProgram('ffmpeg');
  if (!janus || !ffmpeg) throw new Error('the Janus tests need janus and ffmpeg: npm run setup:media (Debian: apt-get install janus ffmpeg)');
  if (process.getuid?.() !== 0) throw new Error('the Janus tests make network namespaces: run them as root (as CI does)');
  return { janus, ffmpeg };
}

export interface TestNode {
  nodeId: string;
  /** The WHIP or WHEP URL of a stream at this node's endpoints. */
  url(protocol: 'whip' | 'whep', stream: string): string;
  /** This node as an edge's parent. */
  link: ParentLink;
  plan: NetnsPlan;
  runtime: JanusRuntime;
  engine: JanusEngine;
  gate: AdmissionGate;
  logs: string[];
}

/** A gate told that the group admits anyone (the engine tests have no control plane). */
export function openGate(nodeId: string): AdmissionGate {
  const gate = new AdmissionGate('g', nodeId);
  gate.update({ required: false, keys: [], leewayMs: 0 }, undefined);
  return gate;
}

export async function janusNode(t: ExecutionContext | { teardown(fn: () => Promise<void>): void }, o: { nodeId: string; role: Role; loopback: string; dir?: string }): Promise<TestNode> {
  const { janus } = janusTools();
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'sy-janus-'));
  const plan = netnsPlan(o.nodeId, o.loopback, JANUS_SUBNET);
  const logs: string[] = [];
  const log = (msg: string, extra?: Record<string, unknown>) => logs.push(`${msg} ${JSON.stringify(extra ?? {})}`);
  const runtime = new JanusRuntime({ nodeId: o.nodeId, dir: join(dir, 'janus'), binary: janus, network: { kind: 'netns', plan }, log });
  const gate = openGate(o.nodeId);
  const engine = new JanusEngine({ role: o.role, runtime, relays: new RelayClient(), gate, subnet: parseSubnet(JANUS_SUBNET), log });
  const endpoints = new WebRtcEndpoints({ engine, gate, role: o.role, scope: 'live', draining: () => false, maxSessions: 100, log });
  t.teardown(async () => {
    await endpoints.stop();
    await engine.stop();
    if (!o.dir) rmSync(dir, { recursive: true, force: true });
  });
  await engine.start();
  await endpoints.start(o.loopback, 0);
  const base = `http://${o.loopback}:${endpoints.port}`;
  return {
    nodeId: o.nodeId,
    url: (protocol, stream) => `${base}/${protocol}/live/${stream}`,
    link: { nodeId: o.nodeId, address: o.loopback, port: endpoints.port, protocol: 'whep' },
    plan,
    runtime,
    engine,
    gate,
    logs,
  };
}

/**
 * Namespaces and links of these plans still on the machine, and their bridge if nothing is on it
 * any more (another test file's nodes may share it meanwhile: then it is theirs).
 */
export function leftovers(plans: readonly NetnsPlan[]): string[] {
  const namespaces = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  const links = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' });
  const has = (name: string) => links.includes(` ${name}:`) || links.includes(` ${name}@`);
  const found: string[] = [];
  for (const p of plans) {
    if (namespaces.split('\n').some((l) => l.split(' ')[0] === p.namespace)) found.push(p.namespace);
    if (has(p.hostLink)) found.push(p.hostLink);
    if (has(p.bridge) && !links.includes(` master ${p.bridge} `)) found.push(p.bridge);
  }
  return [...new Set(found)];
}

/** A promise bounded by `ms`: the test fails with `what` instead of hanging (a bound, not a synchronisation). */
export async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
