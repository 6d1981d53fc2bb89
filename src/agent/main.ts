// The node agent (CONTRACT §6): runs beside a media server (here: the simulated one), posts its
// events to the control plane every heartbeatMs, and does what the reply says (parent, drain,
// transcode jobs). Started by the local platform, or by an operator on a static or cloud node.
import { setTimeout as sleep } from 'node:timers/promises';
import { ROLES, type Role } from '../domain/vocabulary.js';
import { SimulatedBackend, type TranscodeJob } from './simulated.js';

interface AgentConfig {
  url: string;
  nodeId: string;
  token: string;
  role: Role;
  scope: string;
  address: string;
  port: number;
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
  return {
    url: need('SWITCHYARD_URL').replace(/\/+$/, ''),
    nodeId: need('SWITCHYARD_NODE_ID'),
    token: need('SWITCHYARD_NODE_TOKEN'),
    role,
    scope: env.SWITCHYARD_NODE_SCOPE || 'live',
    address: env.SWITCHYARD_NODE_ADDRESS || '127.0.0.1',
    port: Number(env.SWITCHYARD_NODE_PORT || 0),
    orphanTimeoutMs: Number(env.SWITCHYARD_ORPHAN_TIMEOUT_MS || 300_000),
  };
}

interface Reply {
  heartbeatMs: number;
  parent: { nodeId: string; address: string } | null;
  drain: boolean;
  token?: string;
  transcode?: TranscodeJob[];
}

const log = (msg: string, extra: Record<string, unknown> = {}) =>
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), msg, ...extra })}\n`);

async function main(): Promise<void> {
  const config = readConfig(process.env);
  const backend = new SimulatedBackend(config.role, config.scope);
  await backend.start(config.address, config.port);
  log('listening', { nodeId: config.nodeId, address: backend.address, port: backend.port });

  let stopping = false;
  const stop = async (why: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    log('stopping', { why });
    await backend.stop();
    process.exit(code);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  let token = config.token;
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
    const report = backend.report();
    try {
      const res = await fetch(`${config.url}/as/v1/nodes/${encodeURIComponent(config.nodeId)}/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ ...report, address: { public: backend.address, private: backend.address } }),
        signal: AbortSignal.timeout(Math.max(1000, heartbeatMs)),
      });
      if (res.ok) {
        const reply = (await res.json()) as Reply;
        heartbeatMs = reply.heartbeatMs;
        backend.parent = reply.parent;
        backend.draining = reply.drain;
        // No `transcode` in a reply means "no change" (the control plane may still be loading).
        if (reply.transcode) backend.setJobs(reply.transcode);
        if (reply.token) token = reply.token;
        lastOk = Date.now();
        refused = 0;
        outcome('heartbeats accepted', { parent: reply.parent?.nodeId ?? null, drain: reply.drain });
      } else {
        outcome(`heartbeat refused: ${res.status}`, { body: (await res.text()).slice(0, 300) });
        // The control plane no longer knows this node, or its token: a local node has no future.
        if (res.status === 401 || res.status === 403 || res.status === 404) {
          if (++refused >= 3) return stop(`the control plane refuses this node (${res.status})`, 0);
        }
      }
    } catch (err) {
      // The control plane is away: keep serving, keep trying.
      outcome(`heartbeat failed: ${(err as Error).name}`, { error: (err as Error).message, cause: String((err as { cause?: unknown }).cause ?? '') });
    }
    if (Date.now() - lastOk > config.orphanTimeoutMs) return stop(`no contact with the control plane for ${config.orphanTimeoutMs} ms`, 0);
    await sleep(heartbeatMs);
  }
}

main().catch((err: Error) => {
  log('fatal', { error: err.message });
  process.exit(1);
});
