// A simulated media node: it counts publish and subscribe sessions that clients open through a
// small HTTP API, so that load is real and driven from outside:
//   POST   /{scope}/{stream}/publish     → 201 {session}   (origins and transcoders)
//   POST   /{scope}/{stream}/subscribe   → 201 {session}   (edges, and origins)
//          both with the lookup answer's admission token, as ?token= or Authorization: Bearer
//          (docs/security.md, "Who may publish and play"): 403 without a good one
//   DELETE /sessions/{session}           → 204
//   GET    /stats                        → what the heartbeat reports
// A transcoder with a job for a stream pushes one publish session per rendition to the origin the
// control plane named, for as long as the stream's publisher stays.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import { listenWithFallback } from './listen.js';
import { systemMetrics } from './system-metrics.js';
import type { Listener } from '../domain/records.js';
import type { Role } from '../domain/vocabulary.js';
import { STREAM_NAME_RE } from '../domain/vocabulary.js';
import type { BackendReport, MediaBackend, NodeOrders, TranscodeJob } from './backend.js';
import type { AdmissionGate } from './admission/gate.js';

/** The admission token a client presents: `Authorization: Bearer`, else `?token=`. */
function tokenOf(req: IncomingMessage): string | null {
  const auth = req.headers.authorization;
  if (auth?.startsWith('Bearer ')) return auth.slice(7).trim();
  const q = (req.url ?? '').indexOf('?');
  return q < 0 ? null : new URLSearchParams((req.url ?? '').slice(q + 1)).get('token');
}

interface Session {
  id: string;
  stream: string;
  kind: 'publish' | 'subscribe';
  /** When it was opened (ms): a published stream's uptime. */
  since: number;
}

const PUBLISHERS: ReadonlySet<Role> = new Set(['origin', 'transcoder']);
const SUBSCRIBERS: ReadonlySet<Role> = new Set(['edge', 'origin', 'relay']);

export class SimulatedBackend implements MediaBackend {
  private server: Server | null = null;
  private readonly sessions = new Map<string, Session>();
  private readonly publishing = new Map<string, string>();
  private readonly pushes = new Map<string, { origin: string; sessions: Array<{ url: string; session: string }> }>();
  private jobs = new Map<string, TranscodeJob>();
  draining = false;
  parent: NodeOrders['parent'] = null;
  address = '';
  port = 0;

  constructor(
    private readonly role: Role,
    private readonly scope: string,
    private readonly wanted: { address: string; port: number },
    private readonly gate: AdmissionGate,
  ) {}

  /** Listens on (address, port); falls back to a free port, then to 127.0.0.1, when it must. */
  async start(): Promise<void> {
    const listening = await listenWithFallback(
      () => {
        const server = createServer((req, res) => this.handle(req, res));
        server.keepAliveTimeout = 5000;
        return server;
      },
      this.wanted.address,
      this.wanted.port,
    );
    this.server = listening.server;
    this.address = listening.address;
    this.port = listening.port;
  }

  async stop(): Promise<void> {
    await Promise.allSettled([...this.pushes.keys()].map((s) => this.stopPush(s)));
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
  }

  async report(): Promise<BackendReport> {
    return this.snapshot();
  }

  async apply(orders: NodeOrders): Promise<void> {
    this.parent = orders.parent;
    this.draining = orders.drain;
    if (orders.transcode) this.setJobs(orders.transcode);
    for (const stream of orders.drop?.streams ?? []) this.dropPublisher(stream);
  }

  /** Ends a stream's publish session: its binding moved elsewhere, or it was ended. */
  private dropPublisher(stream: string): void {
    const id = this.publishing.get(stream);
    if (id === undefined) return;
    this.sessions.delete(id);
    this.publishing.delete(stream);
    void this.stopPush(stream);
  }

  private snapshot(): BackendReport {
    const perStream = new Map<string, { publishing: boolean; subscribers: number; uptimeMs?: number }>();
    const now = Date.now();
    let publishers = 0;
    let subscribers = 0;
    for (const s of this.sessions.values()) {
      const entry = perStream.get(s.stream) ?? { publishing: false, subscribers: 0 };
      if (s.kind === 'publish') {
        entry.publishing = true;
        // A simulated node carries no media: its publisher's uptime is all it can say of it.
        entry.uptimeMs = now - s.since;
        publishers++;
      } else {
        entry.subscribers++;
        subscribers++;
      }
      perStream.set(s.stream, entry);
    }
    const listener: Listener = { protocol: 'http', port: this.port };
    return {
      ready: this.server !== null,
      listeners: { ...(PUBLISHERS.has(this.role) ? { publish: listener } : {}), ...(SUBSCRIBERS.has(this.role) ? { subscribe: listener } : {}) },
      metrics: {
        ...systemMetrics(),
        'connections.publisher': publishers,
        'connections.subscriber': subscribers,
        'connections.clusterchildren': 0,
      },
      streams: [...perStream].map(([name, e]) => ({ name, ...e })),
    };
  }

  /** The transcode jobs the control plane gave in its last reply. */
  setJobs(jobs: readonly TranscodeJob[]): void {
    this.jobs = new Map(jobs.map((j) => [j.stream, j]));
    for (const stream of [...this.pushes.keys()]) {
      const job = this.jobs.get(stream);
      if (!job || job.origin.nodeId !== this.pushes.get(stream)!.origin || !this.publishing.has(stream)) void this.stopPush(stream);
    }
    for (const stream of this.publishing.keys()) void this.startPush(stream);
  }

  private async startPush(stream: string): Promise<void> {
    const job = this.jobs.get(stream);
    if (this.role !== 'transcoder' || !job || this.pushes.has(stream)) return;
    const entry = { origin: job.origin.nodeId, sessions: [] as Array<{ url: string; session: string }> };
    this.pushes.set(stream, entry);
    const base = `http://${job.origin.address}:${job.origin.port}`;
    for (const r of job.renditions) {
      try {
        const token = job.tokens?.[r.name];
        const res = await fetch(`${base}/${this.scope}/${r.name}/publish`, {
          method: 'POST',
          ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
          signal: AbortSignal.timeout(2000),
        });
        if (res.ok) entry.sessions.push({ url: base, session: ((await res.json()) as { session: string }).session });
        else await res.body?.cancel();
      } catch {
        /* the origin is away; the next reply retries */
      }
    }
    if (entry.sessions.length < job.renditions.length && this.pushes.get(stream) === entry) {
      await this.stopPush(stream);
    }
  }

  private async stopPush(stream: string): Promise<void> {
    const entry = this.pushes.get(stream);
    if (!entry) return;
    this.pushes.delete(stream);
    await Promise.allSettled(entry.sessions.map(async (s) => (await fetch(`${s.url}/sessions/${s.session}`, { method: 'DELETE', signal: AbortSignal.timeout(2000) })).body?.cancel()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const send = (status: number, body?: unknown) => {
      res.writeHead(status, body === undefined ? {} : { 'content-type': 'application/json' });
      res.end(body === undefined ? undefined : JSON.stringify(body));
    };
    req.resume();
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method === 'GET' && path === '/stats') {
      send(200, { role: this.role, parent: this.parent, draining: this.draining, ...this.snapshot() });
      return;
    }
    const del = /^\/sessions\/([0-9a-f-]{36})$/.exec(path);
    if (req.method === 'DELETE' && del) {
      const s = this.sessions.get(del[1]!);
      if (!s) {
        send(404, { error: 'no such session' });
        return;
      }
      this.sessions.delete(s.id);
      if (s.kind === 'publish') {
        this.publishing.delete(s.stream);
        void this.stopPush(s.stream);
      }
      send(204);
      return;
    }
    const open = /^\/([^/]+)\/([^/]+)\/(publish|subscribe)$/.exec(path);
    if (req.method === 'POST' && open) {
      const [, scope, stream, kind] = open as unknown as [string, string, string, 'publish' | 'subscribe'];
      if (scope !== this.scope) {
        send(404, { error: `no scope '${scope}' here` });
        return;
      }
      if (!STREAM_NAME_RE.test(stream)) {
        send(400, { error: 'bad stream name' });
        return;
      }
      if (this.draining) {
        send(503, { error: 'this node is draining' });
        return;
      }
      if (!(kind === 'publish' ? PUBLISHERS : SUBSCRIBERS).has(this.role)) {
        send(405, { error: `a ${this.role} does not take ${kind} sessions` });
        return;
      }
      const verdict = this.gate.check(kind === 'publish' ? 'publish' : 'play', stream, tokenOf(req));
      if (!verdict.ok) {
        send(403, { error: `not admitted: ${verdict.reason}` });
        return;
      }
      if (kind === 'publish' && this.publishing.has(stream)) {
        send(409, { error: `stream '${stream}' is already published here` });
        return;
      }
      const session: Session = { id: randomUUID(), stream, kind, since: Date.now() };
      this.sessions.set(session.id, session);
      if (kind === 'publish') {
        this.publishing.set(stream, session.id);
        void this.startPush(stream);
      }
      send(201, { session: session.id, stream, kind });
      return;
    }
    send(404, { error: 'not found' });
  }
}
