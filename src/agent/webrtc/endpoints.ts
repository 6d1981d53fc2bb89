// A WebRTC node's WHIP (RFC 9725) and WHEP endpoints, whichever engine is behind them
// (docs/webrtc.md, "The node's endpoints"):
//   POST    /whip/{scope}/{stream}   an SDP offer → 201, Location, the answer   (origins)
//   POST    /whep/{scope}/{stream}   the same for a viewer, or a node pulling   (edges, relays, origins)
//   PATCH   /sessions/{id}           a trickle-ice-sdpfrag → 204 (405 for an ICE restart)
//   DELETE  /sessions/{id}           ends the session → 200
//   OPTIONS on any of them           CORS and what the resource takes
//   GET     /stats                   what the heartbeat reports (with the engine's byte counters)
// Every session is admitted by the node's gate first (docs/security.md, "Who may publish and
// play"): the lookup's token as `Authorization: Bearer` or `?token=`, or a pulling node's relay
// credential. Every input is hostile: bodies bounded, types checked, names checked, and what the
// engine refuses is answered with its status as problem+json.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { checkOffer, FRAGMENT_TYPE, isContentType, MAX_FRAGMENT_BYTES, MAX_SDP_BYTES, SDP_TYPE } from '../../domain/sdp.js';
import { STREAM_NAME_RE, type Role } from '../../domain/vocabulary.js';
import type { AdmissionGate } from '../admission/gate.js';
import { listenWithFallback } from '../listen.js';
import { EngineRefusal, type WebRtcEngine } from './engine.js';
import { PROBLEM_CONTENT_TYPE, problemJson, statusProblem } from '../../schemas/problem.js';

export interface EndpointOptions {
  engine: WebRtcEngine;
  gate: AdmissionGate;
  role: Role;
  scope: string;
  /** Draining: no new viewers (sessions open go on; publishers and pulling nodes are still taken). */
  draining(): boolean;
  /** Sessions at most; past it a new one is answered 503. */
  maxSessions: number;
  log(msg: string, extra?: Record<string, unknown>): void;
}

/** Offers answered at once at most (each costs ICE gathering and a DTLS certificate): more wait their turn as 503s. */
const MAX_ANSWERING = 32;
const SESSION_RE = /^\/sessions\/([A-Za-z0-9_-]{1,64})$/;
const OFFER_RE = /^\/(whip|whep)\/([^/]{1,128})\/([^/]{1,256})$/;

const CORS = {
  'access-control-allow-origin': '*',
  'access-control-allow-methods': 'POST, PATCH, DELETE, OPTIONS',
  'access-control-allow-headers': 'Authorization, Content-Type, If-Match',
  'access-control-expose-headers': 'Location, ETag, Accept-Patch, Link',
  'access-control-max-age': '600',
};

const PUBLISHES: ReadonlySet<Role> = new Set(['origin']);
const PLAYS: ReadonlySet<Role> = new Set(['origin', 'edge', 'relay']);

/** The admission token a client presents: `Authorization: Bearer`, else `?token=`. */
function tokenOf(req: IncomingMessage): string | null {
  const auth = req.headers.authorization;
  if (auth && /^Bearer /i.test(auth)) return auth.slice(7).trim();
  const q = (req.url ?? '').indexOf('?');
  return q < 0 ? null : new URLSearchParams((req.url ?? '').slice(q + 1)).get('token');
}

class BodyTooLarge extends Error {}

function readBody(req: IncomingMessage, limit: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      req.resume();
      return reject(new BodyTooLarge());
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.resume();
        reject(new BodyTooLarge());
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export class WebRtcEndpoints {
  private server: Server | null = null;
  address = '';
  port = 0;
  private answering = 0;
  /** Refusals logged in the current second: a storm of bad clients must not flood the log. */
  private logged = { second: 0, count: 0 };

  constructor(private readonly o: EndpointOptions) {}

  /** Listens on (address, port); falls back to a free port, then to 127.0.0.1, when it must. */
  async start(address: string, port: number): Promise<void> {
    const listening = await listenWithFallback(
      () => {
        const server = createServer((req, res) => void this.handle(req, res));
        server.headersTimeout = 5000;
        server.requestTimeout = 15_000;
        server.keepAliveTimeout = 5000;
        return server;
      },
      address,
      port,
    );
    this.server = listening.server;
    this.address = listening.address;
    this.port = listening.port;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
  }

  /** Sessions open now, as the engine counts them. */
  private open(): number {
    return this.o.engine.streams().reduce((n, s) => n + s.subscribers + (s.publishing ? 1 : 0), 0);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0]!;
    try {
      // The engine's own routes first (Janus: the relay routes of docs/webrtc.md, "Janus nodes").
      if (this.o.engine.serve && (await this.o.engine.serve(req, res))) return;
      if (req.method === 'OPTIONS') return this.options(res, path);
      if (req.method === 'GET' && path === '/stats') return this.send(res, 200, JSON.stringify({ role: this.o.role, streams: this.o.engine.streams() }), 'application/json');
      const offer = OFFER_RE.exec(path);
      if (offer && req.method === 'POST') return await this.offer(req, res, offer[1] as 'whip' | 'whep', offer[2]!, offer[3]!);
      const session = SESSION_RE.exec(path);
      if (session && req.method === 'PATCH') return await this.patch(req, res, session[1]!);
      if (session && req.method === 'DELETE') {
        req.resume();
        return (await this.o.engine.end(session[1]!)) ? this.send(res, 200) : this.problem(res, 404, 'no such session (it ended, or never was)');
      }
      req.resume();
      if (offer || session) return this.problem(res, 405, `${req.method} is not allowed here`, { allow: offer ? 'POST, OPTIONS' : 'PATCH, DELETE, OPTIONS' });
      return this.problem(res, 404, 'not found');
    } catch (err) {
      req.resume();
      if (err instanceof BodyTooLarge) return this.problem(res, 413, 'the body is too large');
      if (err instanceof EngineRefusal) return this.problem(res, err.status, err.message, err.status === 503 ? { 'retry-after': '1' } : {});
      this.o.log('WebRTC endpoint failed', { error: (err as Error).message });
      return this.problem(res, 503, 'the node could not answer; try again', { 'retry-after': '1' });
    }
  }

  private options(res: ServerResponse, path: string): void {
    if (OFFER_RE.test(path)) this.send(res, 204, undefined, undefined, { 'accept-post': SDP_TYPE });
    else if (SESSION_RE.test(path)) this.send(res, 204, undefined, undefined, { 'accept-patch': FRAGMENT_TYPE });
    else this.problem(res, 404, 'not found');
  }

  private async offer(req: IncomingMessage, res: ServerResponse, protocol: 'whip' | 'whep', scope: string, rawStream: string): Promise<void> {
    let stream: string;
    try {
      stream = decodeURIComponent(rawStream);
    } catch {
      stream = '';
    }
    const refuse = (status: number, detail: string, headers: Record<string, string> = {}) => {
      req.resume();
      this.problem(res, status, detail, headers);
    };
    if (scope !== this.o.scope) return refuse(404, `no scope '${scope.slice(0, 64)}' here`);
    if (!STREAM_NAME_RE.test(stream)) return refuse(400, 'not a stream name');
    const action = protocol === 'whip' ? 'publish' : 'play';
    if (!(action === 'publish' ? PUBLISHES : PLAYS).has(this.o.role)) return refuse(405, `a ${this.o.role} does not take ${protocol.toUpperCase()} sessions`, { allow: 'OPTIONS' });
    if (!isContentType(req.headers['content-type'], SDP_TYPE)) return refuse(415, `the body must be ${SDP_TYPE}`);
    const verdict = this.o.gate.check(action, stream, tokenOf(req));
    if (!verdict.ok) {
      this.logRefusal(action, stream, verdict.reason);
      return refuse(401, `not admitted: ${verdict.reason}`, { 'www-authenticate': 'Bearer' });
    }
    const relayFor = verdict.claims?.act === 'relay' ? verdict.claims.sub : undefined;
    // A draining node takes no new viewer (lookups send them elsewhere); its publishers may come
    // back and the nodes under it still pull what it carries, so that draining never cuts media.
    if (this.o.draining() && action === 'play' && relayFor === undefined) return refuse(503, 'this node is draining: look the stream up again', { 'retry-after': '1' });
    if (this.answering >= MAX_ANSWERING || this.open() >= this.o.maxSessions) return refuse(503, 'this node takes no more sessions now', { 'retry-after': '1' });
    const body = await readBody(req, MAX_SDP_BYTES);
    const shape = checkOffer(body);
    if (!shape.ok) return this.problem(res, 400, shape.reason);
    this.answering++;
    try {
      const session = action === 'publish' ? await this.o.engine.publish(stream, body) : await this.o.engine.play(stream, body, relayFor ? { relayFor } : {});
      this.send(res, 201, session.sdp, SDP_TYPE, {
        location: `/sessions/${session.id}`,
        etag: `"${session.id}"`,
        'accept-patch': FRAGMENT_TYPE,
      });
    } finally {
      this.answering--;
    }
  }

  private async patch(req: IncomingMessage, res: ServerResponse, id: string): Promise<void> {
    if (!isContentType(req.headers['content-type'], FRAGMENT_TYPE)) {
      req.resume();
      return this.problem(res, 415, `the body must be ${FRAGMENT_TYPE}`);
    }
    const body = await readBody(req, MAX_FRAGMENT_BYTES);
    const answer = await this.o.engine.patch(id, body);
    if (answer === null) return this.problem(res, 405, 'this session cannot restart ICE: end it and start another', { allow: 'DELETE, OPTIONS' });
    if (answer === '') return this.send(res, 204);
    this.send(res, 200, answer, FRAGMENT_TYPE);
  }

  private send(res: ServerResponse, status: number, body?: string, type?: string, headers: Record<string, string> = {}): void {
    res.writeHead(status, { ...CORS, ...(type ? { 'content-type': type } : {}), ...headers });
    res.end(body);
  }

  private problem(res: ServerResponse, status: number, detail: string, headers: Record<string, string> = {}): void {
    this.send(res, status, problemJson(statusProblem(status, detail)), PROBLEM_CONTENT_TYPE, headers);
  }

  private logRefusal(action: string, stream: string, reason: string): void {
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.logged.second) this.logged = { second, count: 0 };
    if (++this.logged.count <= 10) this.o.log('admission refused', { action, stream: stream.slice(0, 128), reason });
  }
}
