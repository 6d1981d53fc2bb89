// Endpoints 2, 4 and 5: which node a publisher or a subscriber of a stream connects to
// (docs/choosing-nodes.md). The region order is worked out here (query, GeoIP, config); the choice itself
// is the group actor's.
import { isIP } from 'node:net';
import Type from 'typebox';
import type { LookupKind } from '../../model/lookups.js';
import type { GroupHandle } from '../../../actors/group-handle.js';
import type { Assignment } from '../../model/addresses.js';
import { clientUrl } from '../../admission/client-url.js';
import type { AdmissionAction } from '../../admission/grant.js';
import { GroupName, LiveLookupQuery, ServerAssignment, ServerAssignmentWithListener, StreamLookupQuery, StreamName } from '../../schemas/api.js';
import { regionOrder } from '../../policy/selection/region-order.js';
import { clientAddress } from '../client-address.js';
import type { Ctx } from '../context.js';
import { toProblem } from '../middleware/errors.js';
import { Problem, problems } from '../problem.js';
import { problemResponse, route, type RouteDef } from '../route.js';
import { fail, groupOr404, type Services } from '../services.js';
import { EXAMPLE_EDGE, EXAMPLE_GROUP, exampleAssignment } from '../examples.js';

export interface RoutingQuery {
  region?: string;
  strict?: boolean;
  clientIp?: string;
  credential?: string;
}

/** What a lookup answer adds for admission (docs/security.md, "Who may publish and play"): the URL, and the token in it. */
export interface Admitted {
  url: string;
  token?: string;
  expiresAt?: string;
}

/**
 * The token and URL for the node a lookup chose: a token for this stream, node and action when the
 * group admits only the clients it sends, and the whole URL the client uses. Our lookups, SM2's
 * and the WebRTC proxy all answer through here.
 */
export function admitted(services: Services, handle: GroupHandle, a: Assignment, action: AdmissionAction, stream: string): Admitted {
  const { admission, scope, name } = handle.group;
  if (!admission.enabled) return { url: clientUrl({ serverAddress: a.serverAddress, listener: a.listener, scope, stream, action }) };
  const issued = services.admission.issuer.client(name, a.nodeId, action, stream, admission.tokenTtl);
  return {
    url: clientUrl({ serverAddress: a.serverAddress, listener: a.listener, scope, stream, action, token: issued.token }),
    token: issued.token,
    expiresAt: new Date(issued.expiresAt).toISOString(),
  };
}

/**
 * The group's admission webhook, when it has one: the operator's app says whether this client may
 * publish or play this stream before a node is handed out (docs/security.md).
 */
export async function askTheApp(
  services: Services,
  ctx: Ctx,
  handle: GroupHandle,
  action: AdmissionAction,
  stream: string,
  credential: string | undefined,
  subject: string,
  clientIp?: string,
): Promise<void> {
  const hook = handle.group.admission.webhook;
  if (!hook) return;
  const refusal = await services.admission.webhooks.ask(hook, {
    group: handle.name,
    scope: handle.group.scope,
    action,
    stream,
    credential,
    clientAddress: clientIp ?? clientAddress(ctx, services.config.server.trustProxy),
    subject,
  });
  if (refusal) fail(refusal);
}

const errors = {
  400: problemResponse('VALIDATION_FAILED: a bad stream name, query value or region'),
  401: problemResponse('UNAUTHORIZED or TOKEN_EXPIRED'),
  403: problemResponse('FORBIDDEN: a node token'),
  404: problemResponse('NODE_GROUP_NOT_FOUND, STREAM_NOT_FOUND (subscribe to a stream with no binding) or PROVISION_NOT_FOUND (transcode=true)'),
  429: problemResponse(
    "RATE_LIMITED (with Retry-After): the token's lookups per second (limits.lookups), or, for a new stream, the group's PENDING caps (limits.pendingBindings, limits.pendingPerToken)",
  ),
  503: problemResponse('NO_CAPACITY (with Retry-After; a scale-out is requested), NOT_READY or STORE_UNAVAILABLE'),
};

/**
 * The regions a lookup tries, in order (docs/choosing-nodes.md): those asked for (`requested`,
 * comma-separated; `field` names the query parameter in errors), else nearest first from the
 * client's location (`clientIp`, or the connection's address), else the configured order. Our
 * lookups and SM2's (src/compat/red5sm2) both go through here.
 */
export function lookupRegions(
  services: Services,
  ctx: Ctx,
  handle: GroupHandle,
  q: { requested?: string | undefined; clientIp?: string | undefined; strict?: boolean | undefined },
  field = 'region',
): string[] {
  let location = null;
  if (q.clientIp !== undefined) {
    if (isIP(q.clientIp) === 0) throw problems.validation([{ path: 'query.clientIp', message: 'must be an IPv4 or IPv6 address' }]);
    location = services.locator.locate(q.clientIp);
  } else {
    location = services.locator.locate(clientAddress(ctx, services.config.server.trustProxy));
  }
  const order = regionOrder(handle.group, { ...(q.requested ? { requested: q.requested.split(',') } : {}), location, strict: q.strict === true });
  if (!order.ok) {
    throw problems.validation([
      {
        path: `query.${field}`,
        message: `names unknown region(s) ${order.unknown.join(', ')}; node group '${handle.name}' has ${handle.group.regions.map((r) => r.name).join(', ')}`,
      },
    ]);
  }
  return order.regions;
}

/**
 * Endpoints 4 and 5's choice, for our lookups and the WebRTC proxy alike (src/http/proxy): the
 * token's lookup rate first (one client cannot take the front end's capacity), the group, the
 * region order, the group's admission webhook, the group actor's choice, and the admission token
 * and URL for the node chosen. `endpoint` labels the lookup metric.
 */
export async function chooseNode(ctx: Ctx, services: Services, group: string, kind: LookupKind, stream: string, query: RoutingQuery, endpoint: string): Promise<Assignment & Admitted> {
  const started = performance.now();
  let result = 'OK';
  try {
    const claims = ctx.state.user!;
    const wait = services.lookupRate.take(claims.sub, claims.role);
    if (wait > 0) {
      throw new Problem(429, 'RATE_LIMITED', `this token has used its lookups per second (limits.lookups.${claims.role}); slow down`, { retryAfter: Math.max(1, Math.ceil(wait / 1000)) });
    }
    const handle = groupOr404(services, group);
    const regions = lookupRegions(services, ctx, handle, { requested: query.region, clientIp: query.clientIp, strict: query.strict });
    const action = kind === 'subscribe' ? 'play' : 'publish';
    await askTheApp(services, ctx, handle, action, stream, query.credential, claims.sub, query.clientIp);
    const outcome = await handle.lookup(kind, stream, regions, claims.sub);
    if (!outcome.ok) fail(outcome);
    return { ...outcome.node, ...admitted(services, handle, outcome.node, action, stream) };
  } catch (err) {
    result = toProblem(err).code;
    throw err;
  } finally {
    services.metrics.lookup({ endpoint, result }).observe((performance.now() - started) / 1000);
  }
}

export function lookupRoutes(services: Services): RouteDef[] {
  const lookup = (ctx: Ctx, group: string, kind: LookupKind, stream: string, query: RoutingQuery, endpoint: string) => chooseNode(ctx, services, group, kind, stream, query, endpoint);

  const scope = (group: string) => services.actors.group(group)?.group.scope ?? 'live';
  const basic = (a: Assignment & Admitted, group: string, name: string) => ({
    serverAddress: a.serverAddress,
    scope: scope(group),
    name,
    nodeId: a.nodeId,
    role: a.role,
    region: a.region,
    url: a.url,
    ...(a.token !== undefined ? { token: a.token, expiresAt: a.expiresAt } : {}),
  });

  return [
    route({
      method: 'GET',
      path: '/as/v1/streams/stream/{nodeGroup}/{streamName}',
      operationId: 'lookupStream',
      example: { params: { nodeGroup: EXAMPLE_GROUP, streamName: 'cam1' }, query: { transcode: 'false' }, response: exampleAssignment },
      summary: 'Endpoint 2: an origin (transcode=false), a transcoder (transcode=true) or an edge (transcode omitted) for a stream',
      description:
        "transcode=false binds the stream to the least-loaded origin (or returns the origin it is bound to); transcode=true needs a provision and binds a transcoder and the origin that receives its renditions; without transcode, an edge under the stream's origin for a subscriber.",
      tag: 'streams',
      access: 'app',
      params: Type.Object({ nodeGroup: GroupName, streamName: StreamName }),
      query: StreamLookupQuery,
      responses: { 200: { description: 'the node to connect to', schema: ServerAssignment }, ...errors },
      async handle(ctx, { params, query }) {
        const kind: LookupKind = query.transcode === undefined ? 'subscribe' : query.transcode ? 'transcode' : 'publish';
        const a = await lookup(ctx, params.nodeGroup, kind, params.streamName, query, `stream:${kind}`);
        ctx.body = basic(a, params.nodeGroup, params.streamName);
      },
    }),
    ...(['publish', 'subscribe'] as const).map((kind) =>
      route({
        method: 'GET',
        path: `/as/v1/streams/live/{streamName}/${kind}`,
        operationId: kind === 'publish' ? 'lookupPublish' : 'lookupSubscribe',
        example: {
          params: { streamName: 'cam1' },
          query: kind === 'publish' ? { nodeGroup: EXAMPLE_GROUP } : { nodeGroup: EXAMPLE_GROUP, region: 'us-east' },
          response:
            kind === 'publish'
              ? { ...exampleAssignment, port: 1935, protocol: 'rtmp' }
              : { ...exampleAssignment, serverAddress: '127.0.0.3', nodeId: EXAMPLE_EDGE, role: 'edge', port: 443, protocol: 'wss' },
        },
        summary:
          kind === 'publish'
            ? 'Endpoint 4: the origin a publisher connects to, with its publish port and protocol'
            : 'Endpoint 5: the edge a subscriber connects to, with its playback port and protocol',
        description: 'The node group is ?nodeGroup=, else the configured default group.',
        tag: 'streams',
        access: 'app',
        params: Type.Object({ streamName: StreamName }),
        query: LiveLookupQuery,
        responses: { 200: { description: 'the node to connect to', schema: ServerAssignmentWithListener }, ...errors },
        async handle(ctx, { params, query }) {
          const group = query.nodeGroup ?? services.config.defaultNodeGroup;
          const a = await lookup(ctx, group, kind, params.streamName, query, `live:${kind}`);
          ctx.body = { ...basic(a, group, params.streamName), port: a.listener.port, protocol: a.listener.protocol };
        },
      }),
    ),
  ];
}
