// The relay tree on Janus (docs/webrtc.md, "The relay tree: RTP forwarding into a mountpoint"): an edge's agent asks its parent's
// agent to forward a stream's RTP (VideoRoom `rtp_forward`) to the ports of a Streaming mountpoint
// on the edge's Janus. The ask is HTTP between agents, on the parent's WHIP/WHEP listener, with the
// relay credential of the edge's heartbeat reply as Bearer (the parent's admission gate checks it
// for `play`); a forward is a lease the edge renews, so a dead edge's forwards end by themselves.
//
//   POST   /relay/janus/{stream}        {"host": "10.213.0.5", "media": [{"kind": "video", "port": 30002, "rtcpPort": 30003, "pt": 96}, …]}
//                                       → 201 {"id": "…", "leaseMs": 30000}
//   PUT    /relay/janus/{stream}/{id}   renews → 204, or 404 (the parent forgot it: ask again)
//   DELETE /relay/janus/{stream}/{id}   → 204
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AdmissionGate } from '../../admission/gate.js';
import { STREAM_NAME_RE } from '../../../domain/vocabulary.js';
import { ipToInt, isIPv4 } from '../../../policy/network/ipv4.js';
import { EngineRefusal, type ParentLink } from '../engine.js';
import type { MountpointPorts } from './gateway.js';
import { PROBLEM_CONTENT_TYPE, problemJson, statusProblem } from '../../../schemas/problem.js';

export const RELAY_PATH = '/relay/janus/';
export const RELAY_LEASE_MS = 30_000;

export interface RelayTarget {
  host: string;
  /** Per medium: where it goes, and the payload type the mountpoint there expects (forwarded RTP is renumbered to it). */
  media: Array<Pick<MountpointPorts, 'kind' | 'port' | 'rtcpPort'> & { pt: number }>;
}

/** A dynamic RTP payload type (RFC 3551, and the lower range RFC 8872 lets WebRTC use): never one RTCP's packet types collide with. */
export function isDynamicPayloadType(pt: unknown): pt is number {
  return Number.isInteger(pt) && (((pt as number) >= 96 && (pt as number) <= 127) || ((pt as number) >= 35 && (pt as number) <= 63));
}

/** What the parent's engine does for the relay routes. */
export interface RelaySource {
  /** `by`: the asking node (its relay credential's subject), when the credential names one. */
  forward(stream: string, target: RelayTarget, by: string | null): Promise<string>;
  renew(stream: string, id: string): boolean;
  unforward(stream: string, id: string): Promise<boolean>;
}

const ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Where a parent may send RTP: the asking agent's own address, or (on the local platform) an
 * address of the nodes' subnet. Never anywhere a caller names, or a relay credential would
 * turn the parent into a traffic cannon.
 */
export function relayHostAllowed(host: string, remoteAddress: string, subnet: { base: number; prefix: number } | null): boolean {
  if (!isIPv4(host)) return false;
  const remote = remoteAddress.replace(/^::ffff:/, '');
  if (host === remote) return true;
  if (!subnet) return false;
  const size = 2 ** (32 - subnet.prefix);
  const n = ipToInt(host);
  return n > subnet.base + 1 && n < subnet.base + size - 1;
}

/** The body of a forward request, checked; a string says what is wrong. */
export function parseRelayTarget(body: unknown): RelayTarget | string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return 'the body must be a JSON object';
  const b = body as Record<string, unknown>;
  if (typeof b.host !== 'string' || !isIPv4(b.host)) return '`host` must be an IPv4 address';
  if (!Array.isArray(b.media) || b.media.length < 1 || b.media.length > 2) return '`media` must list one or two media';
  const media: RelayTarget['media'] = [];
  for (const m of b.media as unknown[]) {
    const x = (typeof m === 'object' && m !== null ? m : {}) as Record<string, unknown>;
    const port = (p: unknown) => Number.isInteger(p) && (p as number) >= 1 && (p as number) <= 65535;
    if ((x.kind !== 'audio' && x.kind !== 'video') || !port(x.port) || !port(x.rtcpPort)) return 'each of `media` needs `kind` (audio or video), `port` and `rtcpPort`';
    if (!isDynamicPayloadType(x.pt)) return 'each of `media` needs `pt`, a dynamic payload type (35-63 or 96-127)';
    if (media.some((y) => y.kind === x.kind)) return `\`media\` lists ${x.kind} twice`;
    media.push({ kind: x.kind, port: x.port as number, rtcpPort: x.rtcpPort as number, pt: x.pt });
  }
  return { host: b.host, media };
}

/** Answers a problem document; true (the request was answered). */
function problem(res: ServerResponse, status: number, detail: string): true {
  res.writeHead(status, { 'content-type': PROBLEM_CONTENT_TYPE });
  res.end(problemJson(statusProblem(status, detail)));
  return true;
}

async function readJson(req: IncomingMessage, limit = 4096): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new EngineRefusal(400, `the body is over ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new EngineRefusal(400, 'the body is not JSON');
  }
}

/**
 * Serves the relay routes on the agent's HTTP listener: true when the request was one of them
 * (answered), false to let the agent's other routes have it.
 */
export async function serveRelay(req: IncomingMessage, res: ServerResponse, deps: { source: RelaySource; gate: AdmissionGate; subnet: { base: number; prefix: number } | null }): Promise<boolean> {
  const url = new URL(req.url ?? '/', 'http://agent');
  if (!url.pathname.startsWith(RELAY_PATH)) return false;
  const parts = url.pathname.slice(RELAY_PATH.length).split('/');
  const stream = decodeURIComponent(parts[0] ?? '');
  const id = parts[1];
  if (!STREAM_NAME_RE.test(stream) || parts.length > 2 || (id !== undefined && !ID_RE.test(id))) {
    problem(res, 404, 'no such relay resource');
    return true;
  }
  const auth = req.headers.authorization ?? '';
  const token = /^Bearer ([A-Za-z0-9._-]{1,4096})$/.exec(auth)?.[1];
  const verdict = deps.gate.check('play', stream, token);
  // A relay credential, not a viewer's play token: only nodes ask for forwards.
  if (!verdict.ok || (verdict.claims !== null && verdict.claims.act !== 'relay')) {
    problem(res, verdict.ok ? 403 : 401, verdict.ok ? 'a relay credential is needed to ask for a forward' : verdict.reason);
    return true;
  }
  try {
    if (id === undefined && req.method === 'POST') {
      const target = parseRelayTarget(await readJson(req));
      if (typeof target === 'string') return problem(res, 400, target);
      if (!relayHostAllowed(target.host, req.socket.remoteAddress ?? '', deps.subnet)) return problem(res, 403, `this node does not forward to ${target.host}`);
      const forwardId = await deps.source.forward(stream, target, verdict.claims?.sub ?? null);
      res.writeHead(201, { 'content-type': 'application/json', location: `${RELAY_PATH}${encodeURIComponent(stream)}/${forwardId}` });
      res.end(JSON.stringify({ id: forwardId, leaseMs: RELAY_LEASE_MS }));
    } else if (id !== undefined && req.method === 'PUT') {
      if (!deps.source.renew(stream, id)) return problem(res, 404, 'no such forward');
      res.writeHead(204).end();
    } else if (id !== undefined && req.method === 'DELETE') {
      if (!(await deps.source.unforward(stream, id))) return problem(res, 404, 'no such forward');
      res.writeHead(204).end();
    } else {
      res.setHeader('allow', id === undefined ? 'POST' : 'PUT, DELETE');
      problem(res, 405, `${req.method} is not allowed here`);
    }
  } catch (err) {
    if (err instanceof EngineRefusal) problem(res, err.status, err.message);
    else problem(res, 503, `janus: ${(err as Error).message}`);
  }
  return true;
}

/** The edge's side: asks its parent's agent. */
export class RelayClient {
  constructor(private readonly timeoutMs = 5000) {}

  private url(parent: ParentLink, stream: string, id?: string): string {
    const host = parent.address.includes(':') ? `[${parent.address}]` : parent.address;
    return `http://${host}:${parent.port}${RELAY_PATH}${encodeURIComponent(stream)}${id ? `/${id}` : ''}`;
  }

  private headers(parent: ParentLink): Record<string, string> {
    return { 'content-type': 'application/json', ...(parent.credential ? { authorization: `Bearer ${parent.credential}` } : {}) };
  }

  /** Asks for a forward; its id, or an EngineRefusal that says why not (404: no publisher there). */
  async forward(parent: ParentLink, stream: string, target: RelayTarget): Promise<string> {
    let res: Response;
    try {
      res = await fetch(this.url(parent, stream), { method: 'POST', headers: this.headers(parent), body: JSON.stringify(target), signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      throw new EngineRefusal(503, `the parent ${parent.nodeId} does not answer: ${(err as Error).message}`);
    }
    const text = await res.text();
    if (res.status !== 201) {
      let detail = text.slice(0, 200);
      try {
        detail = String((JSON.parse(text) as { detail?: unknown }).detail ?? detail);
      } catch {
        /* not a problem document */
      }
      throw new EngineRefusal(res.status === 404 ? 404 : 503, `the parent ${parent.nodeId} answered ${res.status}: ${detail}`);
    }
    const id = (JSON.parse(text) as { id?: unknown }).id;
    if (typeof id !== 'string' || !ID_RE.test(id)) throw new EngineRefusal(503, `the parent ${parent.nodeId} answered without a forward id`);
    return id;
  }

  /** Renews a forward: false when the parent no longer has it (or does not answer). */
  async renew(parent: ParentLink, stream: string, id: string): Promise<boolean> {
    try {
      const res = await fetch(this.url(parent, stream, id), { method: 'PUT', headers: this.headers(parent), signal: AbortSignal.timeout(this.timeoutMs) });
      await res.body?.cancel();
      return res.status === 204;
    } catch {
      return false;
    }
  }

  async release(parent: ParentLink, stream: string, id: string): Promise<void> {
    try {
      const res = await fetch(this.url(parent, stream, id), { method: 'DELETE', headers: this.headers(parent), signal: AbortSignal.timeout(this.timeoutMs) });
      await res.body?.cancel();
    } catch {
      /* the lease ends it */
    }
  }
}
