// The WebRTC signalling proxy's work (docs/webrtc.md, "The signalling proxy"), shared by our
// routes (routes.ts) and Red5 SM2's (src/compat/red5sm2/proxy-routes.ts): the offer read and
// checked, the group's roles asked whether they serve WHIP or WHEP at all, the node chosen as
// endpoints 4 and 5 choose it, the offer forwarded to that node's agent with the lookup's
// admission token, and the node's answer passed back with a sealed Location on the proxy.
// PATCH and DELETE on that Location reach the same node and nothing else.
import type { GroupHandle } from '../../../actors/group-handle.js';
import { checkOffer, FRAGMENT_TYPE, isContentType, MAX_FRAGMENT_BYTES, MAX_SDP_BYTES, parseFragment, SDP_TYPE } from '../../domain/sdp.js';
import type { Assignment } from '../../model/addresses.js';
import type { Ctx } from '../context.js';
import { readBytes } from '../middleware/json-body.js';
import { Problem } from '../problem.js';
import type { Admitted } from '../routes/lookups.js';
import type { Services } from '../services.js';
import { deleteAt, type NodeAnswer, NodeUnreachable, offerTo, patchAt } from './forward.js';
import { openSession, sealSession } from './sessions.js';

export type WebRtcProtocol = 'whip' | 'whep';

/** The header that names the node the proxy chose (or that a session is on). */
export const NODE_HEADER = 'X-Switchyard-Node';
export const SESSIONS_PATH = '/as/v1/proxy/sessions';

/** Browsers call the proxy from the app's own origin; tokens ride in Authorization, never in cookies, so any origin may. */
export const PROXY_CORS: Record<string, string> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Allow-Methods': 'POST, PATCH, DELETE, OPTIONS',
  'Access-Control-Allow-Headers': 'Authorization, Content-Type, If-Match, X-Request-Id',
  'Access-Control-Expose-Headers': `Location, ETag, Accept-Patch, Link, Retry-After, ${NODE_HEADER}, X-Request-Id`,
  'Access-Control-Max-Age': '600',
};

/** Reads a body of `type` up to `limit` bytes: 415 for another type, 413 past the limit, 408 when it is too slow. */
async function readTyped(ctx: Ctx, type: string, limit: number): Promise<string> {
  if (!isContentType(ctx.get('content-type') || undefined, type)) {
    const given = ctx.get('content-type');
    throw new Problem(415, 'UNSUPPORTED_MEDIA_TYPE', `the body must be ${type}${given ? `, not ${given.slice(0, 100)}` : ''}`);
  }
  try {
    return (await readBytes(ctx.req, limit, ctx.get('content-length') || undefined)).toString('utf8');
  } catch (err) {
    const kind = (err as { type?: string }).type;
    if (kind === 'entity.too.large') throw new Problem(413, 'PAYLOAD_TOO_LARGE', `the body is over ${limit} bytes`);
    if (kind === 'request.timeout') throw new Problem(408, 'REQUEST_TIMEOUT', 'the body did not arrive in time');
    throw new Problem(400, 'BAD_REQUEST', 'the body could not be read');
  }
}

/** The client's SDP offer, checked for shape and size before anything else is done for it. */
export async function readOffer(ctx: Ctx): Promise<string> {
  const offer = await readTyped(ctx, SDP_TYPE, MAX_SDP_BYTES);
  const shape = checkOffer(offer);
  if (!shape.ok) throw new Problem(400, 'BAD_SDP', shape.reason);
  return offer;
}

/**
 * Whether the group's nodes take this protocol at all (roles.<role>.serves): WHIP on origins, WHEP
 * on edges (on origins where the group has no edges). Asked before a node is chosen, so that a
 * group of RTMP nodes gets no binding from a WebRTC client.
 */
export function requireServed(handle: GroupHandle, protocol: WebRtcProtocol, transcode = false): void {
  const roles = handle.group.roles;
  const role = protocol === 'whip' ? (transcode ? 'transcoder' : 'origin') : roles.edge ? 'edge' : 'origin';
  if (roles[role]?.serves?.includes(protocol)) return;
  throw new Problem(
    409,
    'PROTOCOL_NOT_SERVED',
    `node group '${handle.name}' does not serve ${protocol.toUpperCase()}: its ${role}s serve ${roles[role]?.serves?.join(', ') || 'no declared protocol'} (roles.${role}.serves)`,
  );
}

/** What the node's refusal of an offer means to the client. */
function refusal(answer: NodeAnswer, nodeId: string, protocol: WebRtcProtocol): Problem {
  const said = (() => {
    try {
      const d = (JSON.parse(answer.body) as { detail?: unknown }).detail;
      return typeof d === 'string' ? d.slice(0, 300) : '';
    } catch {
      return '';
    }
  })();
  const why = said || `status ${answer.status}`;
  switch (answer.status) {
    case 400:
    case 415:
      return new Problem(400, 'BAD_SDP', `node ${nodeId} could not take the offer: ${why}`);
    case 422:
      return new Problem(422, 'NO_COMMON_CODEC', `node ${nodeId}: ${why}`);
    case 404:
      return new Problem(404, 'STREAM_NOT_FOUND', `node ${nodeId}: ${why}`);
    case 409:
      return new Problem(409, 'STREAM_PUBLISHED', `node ${nodeId}: ${why}`);
    case 401:
    case 403:
      // Our own token refused: the node has not heard from the control plane yet, or its key moved on.
      return new Problem(503, 'NODE_NOT_READY', `node ${nodeId} did not admit the session yet (${why}); retry shortly`, { retryAfter: 1 });
    default:
      return new Problem(503, 'NODE_UNAVAILABLE', `node ${nodeId} could not take the ${protocol.toUpperCase()} session (${why}); retry`, { retryAfter: 1 });
  }
}

/** Forwards the offer to the node chosen and answers the client with the node's answer. */
export async function forwardOffer(ctx: Ctx, services: Services, handle: GroupHandle, protocol: WebRtcProtocol, stream: string, offer: string, a: Assignment & Admitted): Promise<void> {
  ctx.set(NODE_HEADER, a.nodeId);
  if (a.listener.protocol !== protocol) {
    throw new Problem(409, 'PROTOCOL_NOT_SERVED', `node ${a.nodeId} serves ${a.listener.protocol}, not ${protocol.toUpperCase()}: its agent runs no WebRTC engine`);
  }
  let answer: NodeAnswer;
  try {
    answer = await offerTo({ address: a.serverAddress, port: a.listener.port }, protocol, handle.group.scope, stream, offer, a.token);
  } catch (err) {
    if (!(err instanceof NodeUnreachable)) throw err;
    throw new Problem(503, 'NODE_UNREACHABLE', `node ${a.nodeId}: ${err.message}; retry (a node that stays away is replaced)`, { retryAfter: 1 });
  }
  if (answer.status !== 201) throw refusal(answer, a.nodeId, protocol);
  if (answer.contentType !== SDP_TYPE || answer.resource === null || !answer.body.startsWith('v=0')) {
    throw new Problem(503, 'NODE_UNAVAILABLE', `node ${a.nodeId} answered without an SDP answer or a session; retry`, { retryAfter: 1 });
  }
  const id = sealSession({ g: handle.name, n: a.nodeId, a: a.serverAddress, p: a.listener.port, r: answer.resource, k: protocol, s: stream }, (g, n, text) =>
    services.admission.issuer.sessionMac(g, n, text),
  );
  ctx.status = 201;
  ctx.set('Location', `${SESSIONS_PATH}/${id}`);
  ctx.set('Accept-Patch', FRAGMENT_TYPE);
  if (answer.etag) ctx.set('ETag', answer.etag.slice(0, 100));
  ctx.type = SDP_TYPE;
  ctx.body = answer.body;
}

function opened(services: Services, id: string) {
  const session = openSession(id, (g, n, text) => services.admission.issuer.sessionMac(g, n, text));
  if (!session) throw new Problem(404, 'SESSION_NOT_FOUND', 'no session of this proxy has this id');
  return session;
}

/** PATCH on a session's Location: the trickle-ice-sdpfrag to its node. */
export async function patchSession(ctx: Ctx, services: Services, id: string): Promise<void> {
  const fragment = await readTyped(ctx, FRAGMENT_TYPE, MAX_FRAGMENT_BYTES);
  const shape = parseFragment(fragment);
  if (!shape.ok) throw new Problem(400, 'BAD_SDP', shape.reason);
  const session = opened(services, id);
  ctx.set(NODE_HEADER, session.n);
  let answer: NodeAnswer;
  try {
    answer = await patchAt({ address: session.a, port: session.p }, session.r, fragment, FRAGMENT_TYPE);
  } catch (err) {
    if (!(err instanceof NodeUnreachable)) throw err;
    throw new Problem(503, 'NODE_UNREACHABLE', `node ${session.n}: ${err.message}`, { retryAfter: 1 });
  }
  if (answer.status === 204) {
    ctx.status = 204;
    return;
  }
  if (answer.status === 200 && answer.contentType === FRAGMENT_TYPE) {
    ctx.type = FRAGMENT_TYPE;
    ctx.body = answer.body;
    return;
  }
  if (answer.status === 404) throw new Problem(404, 'SESSION_NOT_FOUND', `the session ended on node ${session.n}`);
  if (answer.status === 405) throw new Problem(405, 'METHOD_NOT_ALLOWED', `node ${session.n} cannot restart ICE in a session: end it and start another`);
  if (answer.status === 400 || answer.status === 415) throw new Problem(400, 'BAD_SDP', `node ${session.n} could not take the fragment`);
  throw new Problem(503, 'NODE_UNAVAILABLE', `node ${session.n} could not take the fragment (status ${answer.status})`, { retryAfter: 1 });
}

/** DELETE on a session's Location: the session ends on its node. */
export async function endSession(ctx: Ctx, services: Services, id: string): Promise<void> {
  const session = opened(services, id);
  ctx.set(NODE_HEADER, session.n);
  let answer: NodeAnswer;
  try {
    answer = await deleteAt({ address: session.a, port: session.p }, session.r);
  } catch (err) {
    if (!(err instanceof NodeUnreachable)) throw err;
    throw new Problem(503, 'NODE_UNREACHABLE', `node ${session.n}: ${err.message}`, { retryAfter: 1 });
  }
  if (answer.status === 404) throw new Problem(404, 'SESSION_NOT_FOUND', `the session already ended on node ${session.n}`);
  if (answer.status >= 300) throw new Problem(503, 'NODE_UNAVAILABLE', `node ${session.n} could not end the session (status ${answer.status})`, { retryAfter: 1 });
  ctx.status = 200;
  ctx.body = { ended: true, nodeId: session.n, stream: session.s };
}
