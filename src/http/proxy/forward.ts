// The WebRTC proxy's side of a node's WHIP/WHEP endpoints (src/agent/webrtc/endpoints.ts): one
// HTTP exchange each, to the address and port the group knows for the node and a path made here
// from checked names (never from a request's text), bounded in time and size. A node that cannot
// be reached, or answers nonsense, is the node's failure, not the client's.
import { MAX_SDP_BYTES } from '../../domain/sdp.js';

/** How long a node may take to answer an offer (ICE gathering, DTLS certificate, an edge's pull from its parent). */
export const OFFER_TIMEOUT_MS = 10_000;
const OTHER_TIMEOUT_MS = 5000;

export interface NodeAnswer {
  status: number;
  body: string;
  contentType: string;
  /** The node's own resource id for a session it made (from its Location: /sessions/{id}). */
  resource: string | null;
  etag: string | null;
}

/** The node could not be reached, or did not answer in time or in form. */
export class NodeUnreachable extends Error {
  override name = 'NodeUnreachable';
}

const hostOf = (address: string) => (address.includes(':') && !address.startsWith('[') ? `[${address}]` : address);
const RESOURCE = /^\/sessions\/([A-Za-z0-9_-]{1,64})$/;

async function bounded(res: Response, limit: number): Promise<string> {
  const declared = Number(res.headers.get('content-length') ?? 0);
  if (declared > limit) {
    await res.body?.cancel();
    throw new NodeUnreachable('the node answered an oversized body');
  }
  const reader = res.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      throw new NodeUnreachable('the node answered an oversized body');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function exchange(url: string, init: RequestInit, timeoutMs: number): Promise<NodeAnswer> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
  } catch (err) {
    throw new NodeUnreachable((err as Error).name === 'TimeoutError' ? 'the node did not answer in time' : 'the node could not be reached');
  }
  try {
    const body = await bounded(res, MAX_SDP_BYTES);
    const location = res.headers.get('location');
    return {
      status: res.status,
      body,
      contentType: (res.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase(),
      resource: location ? (RESOURCE.exec(location)?.[1] ?? null) : null,
      etag: res.headers.get('etag'),
    };
  } catch (err) {
    if (err instanceof NodeUnreachable) throw err;
    throw new NodeUnreachable('the node broke off its answer');
  }
}

export interface NodeTarget {
  address: string;
  port: number;
}

const base = (t: NodeTarget) => `http://${hostOf(t.address)}:${t.port}`;

/** POSTs an offer to the node's WHIP or WHEP endpoint for `scope/stream`, with the admission token as Bearer. */
export function offerTo(t: NodeTarget, protocol: 'whip' | 'whep', scope: string, stream: string, offer: string, token: string | undefined): Promise<NodeAnswer> {
  return exchange(
    `${base(t)}/${protocol}/${encodeURIComponent(scope)}/${encodeURIComponent(stream)}`,
    { method: 'POST', headers: { 'content-type': 'application/sdp', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: offer },
    OFFER_TIMEOUT_MS,
  );
}

/** PATCHes a session's resource on the node with a trickle-ice-sdpfrag. */
export function patchAt(t: NodeTarget, resource: string, fragment: string, contentType: string): Promise<NodeAnswer> {
  return exchange(`${base(t)}/sessions/${encodeURIComponent(resource)}`, { method: 'PATCH', headers: { 'content-type': contentType }, body: fragment }, OTHER_TIMEOUT_MS);
}

/** DELETEs a session's resource on the node. */
export function deleteAt(t: NodeTarget, resource: string): Promise<NodeAnswer> {
  return exchange(`${base(t)}/sessions/${encodeURIComponent(resource)}`, { method: 'DELETE' }, OTHER_TIMEOUT_MS);
}
