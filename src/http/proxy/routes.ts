// The WebRTC signalling proxy's routes (docs/webrtc.md, "The signalling proxy"): a browser
// publishes with WHIP and plays with WHEP through the control plane, which has a certificate and
// a stable address, while the nodes have neither. Ours:
//   POST    /as/v1/proxy/whip/{scope}/{streamName}   app token; Content-Type application/sdp
//   POST    /as/v1/proxy/whep/{scope}/{streamName}   the same for viewers
//   PATCH   /as/v1/proxy/sessions/{id}               trickle ICE, to the session's node
//   DELETE  /as/v1/proxy/sessions/{id}               ends the session on its node
//   OPTIONS on each                                  CORS preflight
// With compat.red5sm2 on, SM2's shapes take the two POST paths (src/compat/red5sm2/proxy-routes.ts);
// the session routes are the same for both.
import Type from 'typebox';
import { FRAGMENT_TYPE, SDP_TYPE } from '../../domain/sdp.js';
import { LiveLookupQuery, StreamName } from '../../schemas/api.js';
import { EXAMPLE_GROUP } from '../examples.js';
import { problems } from '../problem.js';
import { problemResponse, type ResponseSpec, route, type RouteDef } from '../route.js';
import { chooseNode } from '../routes/lookups.js';
import { groupOr404, type Services } from '../services.js';
import { endSession, forwardOffer, NODE_HEADER, PROXY_CORS, patchSession, readOffer, requireServed, SESSIONS_PATH, type WebRtcProtocol } from './exchange.js';
import { SESSION_ID_PATTERN } from './sessions.js';

export const TAG = 'webrtc';
export const Scope = Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$', description: "the node group's application scope, e.g. live" });
const SessionId = Type.String({ pattern: SESSION_ID_PATTERN, description: 'the id in the Location the POST answered' });

const sdpAnswer: ResponseSpec = {
  description: `the node's SDP answer; Location: the session on this proxy (PATCH, DELETE); ${NODE_HEADER}: the node chosen`,
  schema: Type.String(),
  contentType: SDP_TYPE,
  headers: { Location: 'the session on this proxy', [NODE_HEADER]: 'the node chosen', ETag: "the node's entity tag of the session" },
};

/** The answers of an offer through the proxy, ours and SM2's alike. */
export const offerResponses = (auth: string): Record<number, ResponseSpec> => ({
  201: sdpAnswer,
  400: problemResponse('VALIDATION_FAILED (a bad path or query value, a scope not the group’s) or BAD_SDP (not an SDP offer, or one the node could not apply)'),
  401: problemResponse(auth),
  403: problemResponse("FORBIDDEN (a node token) or ADMISSION_DENIED (the group's admission webhook refused the client)"),
  404: problemResponse('NODE_GROUP_NOT_FOUND, or STREAM_NOT_FOUND (WHEP: nothing published; the node says so too when its publisher is gone)'),
  408: problemResponse('REQUEST_TIMEOUT: the offer did not arrive in time'),
  409: problemResponse("PROTOCOL_NOT_SERVED (the group's nodes do not take WHIP or WHEP: roles.<role>.serves) or STREAM_PUBLISHED (WHIP: another publisher holds the stream there)"),
  413: problemResponse('PAYLOAD_TOO_LARGE: an offer over 64 KiB'),
  415: problemResponse('UNSUPPORTED_MEDIA_TYPE: the body is not application/sdp'),
  422: problemResponse("NO_COMMON_CODEC: the offer takes none of the stream's codecs"),
  429: problemResponse('RATE_LIMITED (with Retry-After): lookups per second, or the PENDING caps'),
  503: problemResponse(
    'NO_CAPACITY, NOT_READY, STORE_UNAVAILABLE, ADMISSION_UNAVAILABLE (the admission webhook did not answer), or NODE_UNREACHABLE / NODE_NOT_READY / NODE_UNAVAILABLE (the node chosen could not take the session; with Retry-After)',
  ),
});

/** An SDP offer as a WHEP client sends it (shortened: a browser's has more lines, and its candidates). */
export const EXAMPLE_OFFER = [
  'v=0',
  'o=- 4611731400430051336 2 IN IP4 127.0.0.1',
  's=-',
  't=0 0',
  'a=group:BUNDLE 0',
  'm=video 9 UDP/TLS/RTP/SAVPF 96',
  'c=IN IP4 0.0.0.0',
  'a=mid:0',
  'a=recvonly',
  'a=rtcp-mux',
  'a=rtpmap:96 VP8/90000',
  'a=ice-ufrag:Xq3f',
  'a=ice-pwd:7b6c9e1f2a3d4c5b6a7f8e9d',
  'a=fingerprint:sha-256 3A:1F:...',
  'a=setup:actpass',
  '',
].join('\r\n');

/** A session id as the Location of a proxied session carries it (made up: its seal does not hold). */
export const EXAMPLE_SESSION_ID = `${Buffer.from(JSON.stringify({ g: 'default', n: 'us-east-edge-9c1d2e', a: '127.0.0.3', p: 18935, r: '5f0c1e2a-8b7d-4c3e-9f10-2a3b4c5d6e7f', k: 'whep', s: 'cam1' })).toString('base64url')}.${'x'.repeat(43)}`;

/** A CORS preflight's answer: what the resource takes. */
export function preflight(path: string, operationId: string, summary: string, accepts: Record<string, string>, example: Record<string, string>, tag = TAG, params = Type.Object({})): RouteDef {
  return route({
    method: 'OPTIONS',
    path,
    operationId,
    summary,
    description: 'Browsers ask before a cross-origin POST, PATCH or DELETE with a token: any origin may call (tokens ride in Authorization, never in cookies).',
    example: { params: example },
    tag,
    access: 'public',
    cors: PROXY_CORS,
    params,
    responses: { 204: { description: 'CORS preflight: the methods and headers the resource takes' } },
    handle(ctx) {
      ctx.set(accepts);
      ctx.status = 204;
    },
  });
}

/** The session routes (PATCH, DELETE, OPTIONS on a Location): the same whichever shape made the session. */
function sessionRoutes(services: Services): RouteDef[] {
  const path = `${SESSIONS_PATH}/{sessionId}`;
  const params = Type.Object({ sessionId: SessionId });
  const notFound = problemResponse('SESSION_NOT_FOUND: an id this proxy did not make, or a session already ended');
  const away = problemResponse("NODE_UNREACHABLE or NODE_UNAVAILABLE: the session's node could not be reached (with Retry-After)");
  return [
    route({
      method: 'PATCH',
      path,
      operationId: 'proxySessionPatch',
      summary: "WebRTC proxy: trickle ICE candidates to a session's node (RFC 8840 fragment)",
      description: 'The Location of a proxied WHIP or WHEP session is a capability: whoever holds it may PATCH or DELETE the session, as WHIP (RFC 9725) has it.',
      tag: TAG,
      access: 'public',
      cors: PROXY_CORS,
      params,
      rawBody: {
        contentType: FRAGMENT_TYPE,
        description: 'a trickle-ice-sdpfrag',
        example: 'a=ice-ufrag:Xq3f\r\na=ice-pwd:7b6c9e1f2a3d4c5b6a7f8e9d\r\na=mid:0\r\na=candidate:1 1 udp 2130706431 198.51.100.7 50000 typ host\r\n',
      },
      example: { params: { sessionId: EXAMPLE_SESSION_ID } },
      responses: {
        200: { description: "the node's answer fragment", schema: Type.String(), contentType: FRAGMENT_TYPE },
        204: { description: 'the candidates were given to the session' },
        400: problemResponse('VALIDATION_FAILED (not a session id) or BAD_SDP (not a fragment)'),
        404: notFound,
        405: problemResponse('METHOD_NOT_ALLOWED: an ICE restart, which these sessions do not do'),
        408: problemResponse('REQUEST_TIMEOUT'),
        413: problemResponse('PAYLOAD_TOO_LARGE: a fragment over 16 KiB'),
        415: problemResponse('UNSUPPORTED_MEDIA_TYPE: the body is not application/trickle-ice-sdpfrag'),
        503: away,
      },
      async handle(ctx, { params: p }) {
        await patchSession(ctx, services, p.sessionId);
      },
    }),
    route({
      method: 'DELETE',
      path,
      operationId: 'proxySessionDelete',
      summary: "WebRTC proxy: end a session on its node (the publisher's or the viewer's)",
      description: 'The session ends on the node its Location names (a publisher stops publishing, a viewer stops playing); a second DELETE is a 404.',
      example: { params: { sessionId: EXAMPLE_SESSION_ID } },
      tag: TAG,
      access: 'public',
      cors: PROXY_CORS,
      params,
      responses: {
        200: { description: 'ended', schema: Type.Object({ ended: Type.Literal(true), nodeId: Type.String(), stream: Type.String() }) },
        400: problemResponse('VALIDATION_FAILED: not a session id'),
        404: notFound,
        503: away,
      },
      async handle(ctx, { params: p }) {
        await endSession(ctx, services, p.sessionId);
      },
    }),
    preflight(path, 'proxySessionOptions', 'WebRTC proxy: CORS preflight of a session', { 'Accept-Patch': FRAGMENT_TYPE }, { sessionId: EXAMPLE_SESSION_ID }, TAG, params),
  ];
}

/** Our offer routes: endpoints 4 and 5's choice, with our query (nodeGroup, region, strict, clientIp, credential). */
function offerRoutes(services: Services): RouteDef[] {
  return (['whip', 'whep'] as const).flatMap((protocol: WebRtcProtocol) => {
    const path = `/as/v1/proxy/${protocol}/{scope}/{streamName}`;
    const params = Type.Object({ scope: Scope, streamName: StreamName });
    const publishing = protocol === 'whip';
    return [
      route({
        method: 'POST',
        path,
        operationId: publishing ? 'proxyWhip' : 'proxyWhep',
        summary: publishing
          ? 'WebRTC proxy: publish with WHIP through the origin endpoint 4 chooses'
          : 'WebRTC proxy: play with WHEP from the edge endpoint 5 chooses (the origin, in a group without edges)',
        description:
          "The SDP offer goes to the chosen node's agent with a fresh admission token; the answer comes back with a Location on this proxy for PATCH and DELETE, and the node's id in X-Switchyard-Node. The node group is ?nodeGroup=, else the configured default group.",
        tag: TAG,
        access: 'app',
        cors: PROXY_CORS,
        params,
        query: LiveLookupQuery,
        rawBody: {
          contentType: SDP_TYPE,
          description: `the client's SDP offer (${publishing ? 'sending' : 'receiving'} audio and/or video), at most 64 KiB`,
          example: publishing ? EXAMPLE_OFFER.replace('a=recvonly', 'a=sendonly') : EXAMPLE_OFFER,
        },
        example: { params: { scope: 'live', streamName: 'cam1' }, query: { nodeGroup: EXAMPLE_GROUP } },
        responses: offerResponses('UNAUTHORIZED or TOKEN_EXPIRED: an app token is required (with WWW-Authenticate: Bearer)'),
        async handle(ctx, { params: p, query }) {
          const handle = groupOr404(services, query.nodeGroup ?? services.config.defaultNodeGroup);
          if (p.scope !== handle.group.scope) throw problems.validation([{ path: 'path.scope', message: `must be node group '${handle.name}'s scope '${handle.group.scope}'` }]);
          const offer = await readOffer(ctx);
          requireServed(handle, protocol);
          const a = await chooseNode(ctx, services, handle.name, publishing ? 'publish' : 'subscribe', p.streamName, query, `proxy:${protocol}`);
          await forwardOffer(ctx, services, handle, protocol, p.streamName, offer, a);
        },
      }),
      preflight(
        path,
        publishing ? 'proxyWhipOptions' : 'proxyWhepOptions',
        `WebRTC proxy: CORS preflight of ${protocol.toUpperCase()}`,
        { 'Accept-Post': SDP_TYPE },
        { scope: 'live', streamName: 'cam1' },
        TAG,
        params,
      ),
    ];
  });
}

/** The proxy's routes: our offer routes unless SM2's take their paths (`offers` false), and the session routes. */
export function proxyRoutes(services: Services, options: { offers: boolean }): RouteDef[] {
  return [...(options.offers ? offerRoutes(services) : []), ...sessionRoutes(services)];
}
