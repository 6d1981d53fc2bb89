#!/usr/bin/env node
// The node agent (docs/nodes.md): runs beside a media server (the simulated one, or a real nginx
// with the RTMP module), sends its events to the control plane every heartbeatMs (over a node
// channel, or one POST each: heartbeats.ts), and does what the reply says (parent, drain,
// transcode jobs). Started by the local platform, or by an operator on a static or cloud node.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { ROLES, type Role } from '../domain/vocabulary.js';
import { findProgram } from '../os/programs.js';
import { BACKENDS, type BackendName, type MediaBackend } from './backend.js';
import { ControlPlanes } from './control-planes.js';
import { heartbeats, TRANSPORTS, type TransportName } from './heartbeats.js';
import { NginxRtmpBackend } from './media/backend.js';
import { SimulatedBackend } from './simulated.js';
import { AdmissionGate } from './admission/gate.js';
import { WebRtcBackend } from './webrtc/backend.js';
import { WeriftEngine } from './webrtc/werift/engine.js';
import { janusEngineFromEnv } from './webrtc/janus/from-env.js';
import { AGENT_HELP, answerFlags } from '../cli/flags.js';

interface AgentConfig {
  url: string;
  nodeId: string;
  token: string;
  role: Role;
  scope: string;
  address: string;
  /** The address clients reach the node at, when it is not the bind address (NAT, a cloud's public IP). */
  publicAddress: string | undefined;
  port: number;
  backend: BackendName;
  /** How events reach the control plane: a node channel (default) or one POST each. */
  transport: TransportName;
  /** The node's own directory (logs, and nginx's config and state). */
  dir: string;
  statPort: number;
  orphanTimeoutMs: number;
}

function readConfig(env: NodeJS.ProcessEnv): AgentConfig {
  const need = (name: string): string => {
    const v = env[name];
    if (!v) {
      console.error(`node agent: ${name} is not set`);
      process.exit(2);
    }
    return v;
  };
  const role = need('SWITCHYARD_NODE_ROLE') as Role;
  if (!ROLES.includes(role)) {
    console.error(`node agent: SWITCHYARD_NODE_ROLE = ${JSON.stringify(role)}: expected one of ${ROLES.join(', ')}`);
    process.exit(2);
  }
  const backend = (env.SWITCHYARD_NODE_BACKEND || 'simulated') as BackendName;
  if (!BACKENDS.includes(backend)) {
    console.error(`node agent: SWITCHYARD_NODE_BACKEND = ${JSON.stringify(backend)}: expected one of ${BACKENDS.join(', ')}`);
    process.exit(2);
  }
  const transport = (env.SWITCHYARD_HEARTBEAT_TRANSPORT || 'channel') as TransportName;
  if (!TRANSPORTS.includes(transport)) {
    console.error(`node agent: SWITCHYARD_HEARTBEAT_TRANSPORT = ${JSON.stringify(transport)}: expected one of ${TRANSPORTS.join(', ')}`);
    process.exit(2);
  }
  return {
    transport,
    url: need('SWITCHYARD_URL').replace(/\/+$/, ''),
    nodeId: need('SWITCHYARD_NODE_ID'),
    token: need('SWITCHYARD_NODE_TOKEN'),
    role,
    scope: env.SWITCHYARD_NODE_SCOPE || 'live',
    address: env.SWITCHYARD_NODE_ADDRESS || '127.0.0.1',
    publicAddress: env.SWITCHYARD_NODE_PUBLIC_ADDRESS || undefined,
    port: Number(env.SWITCHYARD_NODE_PORT || 0),
    backend,
    dir: backend === 'nginx-rtmp' || backend === 'janus' ? need('SWITCHYARD_NODE_DIR') : env.SWITCHYARD_NODE_DIR || process.cwd(),
    statPort: Number(env.SWITCHYARD_NODE_STAT_PORT || 18080),
    orphanTimeoutMs: Number(env.SWITCHYARD_ORPHAN_TIMEOUT_MS || 300_000),
  };
}

const log = (msg: string, extra: Record<string, unknown> = {}) => process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), msg, ...extra })}\n`);

/** The node group this node belongs to: its token says so (SWITCHYARD_NODE_GROUP for a token that does not). */
function groupOf(token: string, env: NodeJS.ProcessEnv): string {
  try {
    const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { nodeGroup?: unknown };
    if (typeof claims.nodeGroup === 'string') return claims.nodeGroup;
  } catch {
    /* not a JWT: the environment must say */
  }
  return env.SWITCHYARD_NODE_GROUP ?? '';
}

/** A program's path (see findProgram), or the name as given: a path, or one the spawn reports missing. */
function which(name: string, env: NodeJS.ProcessEnv): string {
  return name.includes('/') ? name : (findProgram(name, env) ?? name);
}

/** SWITCHYARD_WEBRTC_PORT_RANGE ("min-max"): the UDP ports WebRTC sessions may use, for firewalls; unset, any. */
function portRange(text: string | undefined): [number, number] | undefined {
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(text ?? '');
  if (!m) {
    if (text) log('SWITCHYARD_WEBRTC_PORT_RANGE is not "min-max": ignored', { value: text.slice(0, 40) });
    return undefined;
  }
  const [min, max] = [Number(m[1]), Number(m[2])];
  return min >= 1024 && max <= 65535 && min < max ? [min, max] : undefined;
}

function makeBackend(config: AgentConfig, env: NodeJS.ProcessEnv, gate: AdmissionGate): MediaBackend {
  if (config.backend === 'simulated') return new SimulatedBackend(config.role, config.scope, { address: config.address, port: config.port }, gate);
  if (config.backend === 'werift' || config.backend === 'janus') {
    const range = portRange(env.SWITCHYARD_WEBRTC_PORT_RANGE);
    const engine =
      config.backend === 'janus'
        ? janusEngineFromEnv({ nodeId: config.nodeId, role: config.role, address: config.address, publicAddress: config.publicAddress, dir: config.dir, icePorts: range, gate, log }, env)
        : new WeriftEngine({
            role: config.role,
            scope: config.scope,
            address: config.address,
            ...(config.publicAddress ? { advertised: config.publicAddress } : {}),
            ...(range ? { portRange: range } : {}),
            log,
          });
    const maxSessions = Math.max(1, Number(env.SWITCHYARD_WEBRTC_MAX_SESSIONS) || 500);
    return new WebRtcBackend({ engine, gate, role: config.role, scope: config.scope, address: config.address, port: config.port, maxSessions, log });
  }
  return new NginxRtmpBackend({
    gate,
    nodeId: config.nodeId,
    role: config.role,
    scope: config.scope,
    address: config.address,
    rtmpPort: config.port || 1935,
    statPort: config.statPort,
    dir: config.dir,
    nginx: which(env.SWITCHYARD_NGINX_BIN || 'nginx', env),
    ffmpeg: which(env.SWITCHYARD_FFMPEG_BIN || 'ffmpeg', env),
    modulePath: env.SWITCHYARD_NGINX_RTMP_MODULE || '/usr/lib/nginx/modules/ngx_rtmp_module.so',
    log,
  });
}

/**
 * SWITCHYARD_NODE_TOKEN_FILE (set by config/systemd/switchyard-agent.service): the renewed token
 * is stored there, so that an agent restarted after its bootstrap token expired (24 h) still
 * reports. At start the token that expires last wins: a new bootstrap token the operator gave
 * (after a revocation, say) is newer than the stored one.
 */
function freshestToken(file: string | undefined, given: string): string {
  if (!file) return given;
  let stored: string;
  try {
    stored = readFileSync(file, 'utf8').trim();
  } catch {
    return given;
  }
  const expiry = (token: string) => {
    try {
      return Number((JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as { exp?: unknown }).exp) || 0;
    } catch {
      return 0;
    }
  };
  return stored && expiry(stored) > expiry(given) ? stored : given;
}

function storeRenewedToken(file: string | undefined, token: string): void {
  if (!file) return;
  try {
    writeFileSync(`${file}.tmp`, token, { mode: 0o600 });
    renameSync(`${file}.tmp`, file);
  } catch (err) {
    log('could not keep the renewed token', { file, error: (err as Error).message });
  }
}

async function main(): Promise<void> {
  answerFlags(process.argv.slice(2), AGENT_HELP, 'switchyard-agent', ['--node-id']);
  // The node's directory holds its token in its environment's logs and its media server's state:
  // nothing it (or nginx, or ffmpeg) writes is for other local users.
  process.umask(0o077);
  const config = readConfig(process.env);
  // Who may publish and play here (docs/security.md): the node's key comes in heartbeat replies.
  const gate = new AdmissionGate(groupOf(config.token, process.env), config.nodeId);
  const backend = makeBackend(config, process.env, gate);
  await backend.start();
  log('started', { nodeId: config.nodeId, backend: config.backend, address: backend.address });

  const planes = new ControlPlanes(config.url);
  let beats = heartbeats(config.transport, planes.current, config.nodeId);
  // The instance talked to failed: the next one the replies listed (cluster mode; one URL: no change).
  const failOver = () => {
    if (!planes.failed()) return;
    beats.close();
    beats = heartbeats(config.transport, planes.current, config.nodeId);
    log('moving to another control plane instance', { url: planes.current });
  };
  let stopping = false;
  const stop = async (why: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    log('stopping', { why });
    beats.close();
    await backend.stop();
    process.exit(code);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  // The agent's bind address is the node's private one; only an operator (or cloud-init) knows the
  // public one clients reach, and the control plane prefers its platform's record to a guess.
  const reported = {
    ...(config.publicAddress ? { public: config.publicAddress } : {}),
    ...(backend.address !== '0.0.0.0' && backend.address !== '::' ? { private: backend.address } : {}),
  };
  let token = freshestToken(process.env.SWITCHYARD_NODE_TOKEN_FILE, config.token);
  let heartbeatMs = 2000;
  let lastOk = Date.now();
  let refused = 0;
  // Log each change of outcome once, not every failed heartbeat.
  let lastOutcome = '';
  const outcome = (what: string, extra: Record<string, unknown> = {}) => {
    if (what !== lastOutcome) log(what, extra);
    lastOutcome = what;
  };
  while (!stopping) {
    const report = await backend.report();
    try {
      const event = { ...report, ...(report.problem ? { problem: report.problem.slice(0, 500) } : {}), address: reported };
      const result = await beats.send(event, token, Math.max(1000, heartbeatMs));
      if (result.ok) {
        const reply = result.reply;
        heartbeatMs = reply.heartbeatMs;
        const drop = gate.update(reply.admission, reply.drop);
        // No `transcode` in a reply means "no change" (the control plane may still be loading).
        await backend.apply({
          parent: reply.parent,
          drain: reply.drain,
          ...(reply.transcode ? { transcode: reply.transcode } : {}),
          ...(drop.length > 0 ? { drop: { at: reply.drop!.at, streams: drop } } : {}),
        });
        if (reply.token) {
          token = reply.token;
          storeRenewedToken(process.env.SWITCHYARD_NODE_TOKEN_FILE, token);
        }
        planes.learn(reply.controlPlanes);
        lastOk = Date.now();
        refused = 0;
        outcome('heartbeats accepted', { over: beats.name, parent: reply.parent?.nodeId ?? null, drain: reply.drain });
      } else {
        outcome(`heartbeat refused: ${result.status}`, { body: result.body.slice(0, 300) });
        if (result.status >= 500) failOver();
        // The control plane no longer knows this node, or its token: a local node has no future.
        if (result.status === 401 || result.status === 403 || result.status === 404) {
          if (++refused >= 3) return stop(`the control plane refuses this node (${result.status})`, 0);
        }
      }
    } catch (err) {
      // The control plane is away: keep serving, keep trying.
      outcome(`heartbeat failed: ${(err as Error).name}`, { error: (err as Error).message, cause: String((err as { cause?: unknown }).cause ?? '') });
      failOver();
    }
    if (Date.now() - lastOk > config.orphanTimeoutMs) return stop(`no contact with the control plane for ${config.orphanTimeoutMs} ms`, 0);
    await sleep(heartbeatMs);
  }
}

main().catch((err: Error) => {
  log('fatal', { error: err.message });
  process.exit(1);
});
