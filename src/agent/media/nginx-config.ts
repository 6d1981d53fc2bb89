// One node's nginx.conf, from what the node is (role, address, ports, directory) and what the
// control plane last told it (its parent). Pure: the backend writes the text and (re)loads nginx.
//
// Transcode jobs deliberately do not appear here. nginx-rtmp runs an `exec` when a stream is
// published, with the config of the worker the publisher is connected to; a reload starts a new
// worker but leaves connected publishers on the old one. A publisher usually connects right after
// its lookup, before the transcoder's next heartbeat brings the job, so a job rendered into the
// config would miss it. Instead the transcoder's one `exec` per stream runs a small script that
// waits for that stream's job file (see transcode.ts), and jobs never need a reload.
import { join } from 'node:path';
import type { Role } from '../../domain/vocabulary.js';

export interface NginxNode {
  nodeId: string;
  role: Role;
  /** The application clients name in their URLs (the group's scope). */
  scope: string;
  address: string;
  rtmpPort: number;
  /** The HTTP listener of the stat page, on the node's own address. */
  statPort: number;
  /** The node's own directory: config, pid, logs, temp paths and transcode jobs. */
  dir: string;
  modulePath: string;
  /** Where an edge or relay pulls from, and the credential it presents there; null until the control plane names a parent. */
  parent: { address: string; port: number; credential?: string } | null;
  /**
   * The agent's admission callbacks on 127.0.0.1 (src/agent/admission/callbacks.ts): nginx asks
   * it before every publish and play (docs/security.md, "Who may publish and play").
   */
  admissionPort?: number;
  /** Workers run as this user; set only when the master runs as root (nginx ignores it otherwise). */
  user?: string;
}

export class NginxConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NginxConfigError';
  }
}

/** Files of a node under its directory. */
export function nodePaths(dir: string) {
  return {
    config: join(dir, 'nginx.conf'),
    pid: join(dir, 'nginx.pid'),
    errorLog: join(dir, 'error.log'),
    accessLog: join(dir, 'rtmp-access.log'),
    tmp: join(dir, 'tmp'),
    /** Transcode jobs, one script per stream, apart from the exec script so no stream name can clash with it. */
    jobs: join(dir, 'jobs'),
    transcodeScript: join(dir, 'transcode.sh'),
  };
}

/** Who pulls: the flashVer an edge or relay presents to its parent, so the parent's stat page can tell its cluster children from viewers. */
export const PULL_FLASHVER_PREFIX = 'switchyard/pull/';

const PULLS: ReadonlySet<Role> = new Set(['edge', 'relay']);
const HOST_RE = /^[A-Za-z0-9.:-]{1,253}$/;
const PATH_RE = /^\/[A-Za-z0-9._/~+@%,:= -]*$/;
const SCOPE_RE = /^[A-Za-z0-9._-]{1,64}$/;
const ID_RE = /^[A-Za-z0-9._-]{1,64}$/;
const USER_RE = /^[A-Za-z_][A-Za-z0-9._-]{0,31}$/;
/** An admission credential (a compact JWS): base64url parts and dots, nothing nginx would parse. */
const CREDENTIAL_RE = /^[A-Za-z0-9._-]{1,2048}$/;

function check(ok: boolean, what: string, value: unknown): void {
  if (!ok) throw new NginxConfigError(`${what} ${JSON.stringify(value)} cannot go into an nginx config`);
}

function port(p: number, what: string): number {
  check(Number.isInteger(p) && p >= 1 && p <= 65535, what, p);
  return p;
}

/** A host as it appears in `listen` and in URLs: IPv6 in brackets. */
function host(address: string, what: string): string {
  check(HOST_RE.test(address), what, address);
  return address.includes(':') ? `[${address}]` : address;
}

function path(p: string, what: string): string {
  check(PATH_RE.test(p), what, p);
  return `"${p}"`;
}

export function renderNginxConfig(node: NginxNode): string {
  check(ID_RE.test(node.nodeId), 'node id', node.nodeId);
  check(SCOPE_RE.test(node.scope), 'scope', node.scope);
  if (node.user !== undefined) check(USER_RE.test(node.user), 'user', node.user);
  const p = nodePaths(node.dir);
  const listen = host(node.address, 'address');
  const rtmpPort = port(node.rtmpPort, 'rtmp port');
  const statPort = port(node.statPort, 'stat port');
  check(rtmpPort !== statPort, 'stat port (same as the rtmp port)', statPort);

  const app: string[] = ['live on;', 'record off;', 'wait_key on;'];
  if (node.admissionPort !== undefined) {
    // Every publish and play is asked of the agent first; a refusal ends the client's connection.
    const callback = `http://127.0.0.1:${port(node.admissionPort, 'admission port')}`;
    app.push(`on_publish ${callback}/on_publish;`, `on_play ${callback}/on_play;`, 'notify_method post;');
  }
  if (node.role === 'origin' || node.role === 'transcoder') {
    // A publisher that stalls without closing its connection would otherwise keep its stream listed forever.
    app.push('drop_idle_publisher 10s;');
  }
  if (PULLS.has(node.role)) {
    // Edges and relays carry what they pull; a publisher that lands here by mistake is refused.
    app.push('deny publish all;');
    if (node.parent) {
      const url = `rtmp://${host(node.parent.address, 'parent address')}:${port(node.parent.port, 'parent port')}/${node.scope}`;
      // The parent's on_play sees the credential as pageurl (nginx-rtmp passes no query on a pull).
      const credential = node.parent.credential;
      if (credential !== undefined) check(CREDENTIAL_RE.test(credential), 'parent credential', credential.slice(0, 40));
      app.push(`pull ${url} flashVer=${PULL_FLASHVER_PREFIX}${node.nodeId}${credential !== undefined ? ` pageUrl=${credential}` : ''};`);
    }
  }
  if (node.role === 'transcoder') {
    // One exec per published stream; $name is one argv element, never shell text.
    app.push(`exec /bin/sh ${path(p.transcodeScript, 'transcode script')} $name;`);
  }

  const lines = [
    `# Written by the Switchyard node agent for ${node.nodeId} (${node.role}); rewritten when its parent changes.`,
    `load_module ${path(node.modulePath, 'module path')};`,
    'daemon off;',
    'master_process on;',
    '# One worker: the stat page, pulls and execs are per worker.',
    'worker_processes 1;',
    ...(node.user !== undefined ? [`user ${node.user};`] : []),
    `pid ${path(p.pid, 'pid file')};`,
    `error_log ${path(p.errorLog, 'error log')} info;`,
    'events { worker_connections 4096; }',
    'rtmp {',
    // Without its own access_log the module writes to the shared /var/log/nginx/access.log.
    `  access_log ${path(p.accessLog, 'access log')};`,
    ...(node.role === 'transcoder' ? ['  respawn_timeout 1s;', '  exec_kill_signal term;'] : []),
    '  server {',
    `    listen ${listen}:${rtmpPort};`,
    '    ping 30s;',
    '    ping_timeout 10s;',
    `    application ${node.scope} {`,
    ...app.map((l) => `      ${l}`),
    '    }',
    '  }',
    '}',
    'http {',
    '  access_log off;',
    ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `  ${t}_temp_path ${path(join(p.tmp, t), 'temp path')};`),
    '  server {',
    `    listen ${listen}:${statPort};`,
    '    location = /stat { rtmp_stat all; }',
    // Disconnecting a publisher (a stream moved away or ended): from this machine only.
    '    location /control {',
    '      allow 127.0.0.1;',
    ...(node.address !== '127.0.0.1' && node.address !== '0.0.0.0' && node.address !== '::' ? [`      allow ${node.address};`] : []),
    '      deny all;',
    '      rtmp_control all;',
    '    }',
    '    location / { return 404; }',
    '  }',
    '}',
    '',
  ];
  return lines.join('\n');
}
