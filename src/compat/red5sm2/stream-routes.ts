// SM2's stream service: which server a publisher or a subscriber of `scope/name` connects to, the
// streams of a group, one stream's servers, and the groups a client may name
// (docs/migrating-from-red5-sm2.md). Answers are SM2's arrays of stream locations; the choosing
// is the group actor's, as for our own lookups (README, What it does).
import Type, { type Static } from 'typebox';
import type { GroupHandle } from '../../../actors/group-handle.js';
import type { Assignment } from '../../model/addresses.js';
import type { StreamView } from '../../model/views.js';
import { GroupName } from '../../schemas/api.js';
import { type Admitted, admitted, askTheApp, lookupRegions } from '../../http/routes/lookups.js';
import type { Ctx } from '../../http/context.js';
import { toProblem } from '../../http/middleware/errors.js';
import { problems } from '../../http/problem.js';
import { problemResponse, route, type RouteDef } from '../../http/route.js';
import { fail, groupOr404, type Services } from '../../http/services.js';
import { askerOf, rateLimit, type Check, type Guard } from './access.js';
import { allNodes, allStreams, oneStream, provisionOwning } from './group-reads.js';
import { guidOf, SEGMENT_DESCRIPTION, SEGMENT_PATTERN, streamOf, type Guid } from './names.js';

export const TAG = 'red5-sm2';
const Segment = Type.String({ pattern: SEGMENT_PATTERN, description: SEGMENT_DESCRIPTION });

export const StreamLocation = Type.Object({
  streamGuid: Type.String({ description: 'scope/name (scope/room/name): the name to publish or play' }),
  serverAddress: Type.String({ description: 'host (IP or DNS name) the client connects to' }),
  nodeRole: Type.String(),
  subGroup: Type.String({ description: 'the region' }),
  nodeState: Type.String(),
  subscribers: Type.Optional(Type.Integer({ description: 'with stats=true: viewers of the stream, as its edges last reported' })),
  durationMs: Type.Optional(Type.Integer({ description: 'with stats=true: how long the stream has been live' })),
  url: Type.Optional(Type.String({ description: "Switchyard's own: the whole URL the client connects to, the admission token included (lookups)" })),
  token: Type.Optional(Type.String({ description: "Switchyard's own: the admission token, where the group asks for one (docs/security.md)" })),
});
type Location = Static<typeof StreamLocation>;

const RegionList = Type.String({ pattern: '^[A-Za-z0-9._-]{1,32}(,[A-Za-z0-9._-]{1,32}){0,63}$', description: 'comma-separated regions to try first, in order' });
const LookupQuery = {
  strict: Type.Optional(Type.Boolean({ description: 'true: only the regions asked for (or the nearest); 503 instead of falling back' })),
  endpoints: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, description: 'servers wanted; Switchyard answers one' })),
  subgroup: Type.Optional(RegionList),
  /** The HTML5 testbed's name for subgroup. */
  region: Type.Optional(RegionList),
  credential: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: "Switchyard's own: passed on to the group's admission webhook" })),
};
const PublishQuery = Type.Object(
  {
    ...LookupQuery,
    transcode: Type.Optional(Type.Boolean({ description: 'true: a transcoder for a provisioned stream, then the origin it feeds' })),
    distribute: Type.Optional(Type.Boolean({ description: 'accepted: Switchyard hands a transcoder its ladder by itself' })),
  },
  { additionalProperties: false },
);
const SubscribeQuery = Type.Object(LookupQuery, { additionalProperties: false });
const StatsQuery = Type.Object(
  {
    stats: Type.Optional(Type.Boolean({ description: 'true: with subscribers and durationMs' })),
    aggregate: Type.Optional(Type.Boolean({ description: 'true (default): origins only; false: transcoders too' })),
  },
  { additionalProperties: false },
);

const lookupErrors = {
  400: problemResponse("VALIDATION_FAILED: a bad guid or query value, a scope not the group's, endpoints above 1 with transcode"),
  401: problemResponse('UNAUTHORIZED: a token is required (compat.red5sm2.anonymousLookups is off), or the one sent does not verify'),
  403: problemResponse('FORBIDDEN: a node token, or PASSWORD_CHANGE_REQUIRED'),
  404: problemResponse('NODE_GROUP_NOT_FOUND, STREAM_NOT_FOUND (subscribe to a stream with no binding) or PROVISION_NOT_FOUND (transcode=true)'),
  429: problemResponse('RATE_LIMITED (with Retry-After): the lookups per second of the token, or of the address (limits.lookups.anonymous), or the PENDING caps'),
  503: problemResponse('NO_CAPACITY (with Retry-After; a scale-out is requested), NOT_READY or STORE_UNAVAILABLE'),
};

/** A guid spans two path segments, or three with a room: one route each. */
const guidRoutes = (base: string, suffix: string) => [
  { path: `${base}/{scope}/{name}`, id: suffix, params: {} as Record<string, never> },
  { path: `${base}/{scope}/{room}/{name}`, id: `${suffix}InRoom`, params: { room: Segment } },
];
const guidOfParams = (p: { scope: string; room?: string; name: string }): Guid => ({ scope: p.scope, ...(p.room !== undefined ? { room: p.room } : {}), name: p.name });
const exampleGuid = (room: boolean, name = 'cam1') => ({ nodeGroup: 'default', scope: 'live', ...(room ? { room: 'room1' } : {}), name });

/** What SM2's lookups (and its WebRTC proxy) ask for: the routing query, and a transcoder for a publisher. */
export interface Sm2Routing {
  subgroup?: string | undefined;
  region?: string | undefined;
  strict?: boolean | undefined;
  transcode?: boolean | undefined;
  credential?: string | undefined;
  endpoints?: number | undefined;
}

/** The stream a guid names in a group, or a 400 naming what does not fit. */
export function streamIn(handle: GroupHandle, guid: Guid): string {
  const parsed = streamOf(guid, handle.group.scope);
  if (!parsed.ok) throw problems.validation(parsed.errors);
  return parsed.stream;
}

/**
 * SM2's choice of a node (docs/migrating-from-red5-sm2.md, "Lookups"), for its lookups and its
 * WebRTC proxy alike: the asker (a token, or the client's address where lookups are anonymous)
 * and its rate, the group, the guid's stream, the region order, a transcoder's provision, the
 * group's admission webhook, then the group actor's choice and the admission token for the node.
 * `name` is the stream the client sends or plays: a transcode lookup's is the provision's.
 */
export async function sm2Choose(
  ctx: Ctx,
  services: Services,
  app: Check,
  kind: 'publish' | 'subscribe',
  params: { nodeGroup: string } & Guid,
  query: Sm2Routing,
  endpoint: string,
  /** Checks of the group before a node is chosen (the WebRTC proxy: whether the group serves it). */
  before: (handle: GroupHandle) => void = () => {},
): Promise<{ handle: GroupHandle; stream: string; name: string; node: Assignment; admission: Admitted }> {
  const started = performance.now();
  let result = 'OK';
  const transcode = kind === 'publish' && query.transcode === true;
  try {
    const asker = await askerOf(ctx, services, app);
    rateLimit(services, asker);
    const handle = groupOr404(services, params.nodeGroup);
    const stream = streamIn(handle, params);
    if (transcode && (query.endpoints ?? 1) > 1) throw problems.validation([{ path: 'query.endpoints', message: 'must be 1 with transcode=true' }]);
    before(handle);
    const requested = query.subgroup ?? query.region;
    const regions = lookupRegions(services, ctx, handle, { requested, strict: query.strict }, query.subgroup ? 'subgroup' : 'region');
    // A transcoder is asked for by the provision's guid, or (iOS testbed, SM2's docs) by a
    // variant's: either way the publisher sends the provision's stream, which the answer names.
    const name = transcode ? ((await provisionOwning(handle, stream))?.streamName ?? stream) : stream;
    const action = kind === 'publish' ? 'publish' : 'play';
    await askTheApp(services, ctx, handle, action, name, query.credential, asker.subject);
    const outcome = await handle.lookup(transcode ? 'transcode' : kind, name, regions, asker.subject);
    if (!outcome.ok) fail(outcome);
    return { handle, stream, name, node: outcome.node, admission: admitted(services, handle, outcome.node, action, transcode ? name : stream) };
  } catch (err) {
    result = toProblem(err).code;
    throw err;
  } finally {
    services.metrics.lookup({ endpoint, result }).observe((performance.now() - started) / 1000);
  }
}

export function streamRoutes(services: Services, guard: Guard): RouteDef[] {
  const access = services.config.compat.red5sm2.anonymousLookups ? 'public' : 'app';
  // Made on first use: the app's guard exists once the app does.
  let appGuard: Check | undefined;
  const app: Check = (ctx, next) => (appGuard ??= guard('app'))(ctx, next);

  const located = (a: Assignment, streamGuid: string, admission?: Admitted): Location => ({
    streamGuid,
    serverAddress: a.serverAddress,
    nodeRole: a.role,
    subGroup: a.region,
    nodeState: 'INSERVICE',
    ...(admission ? { url: admission.url, ...(admission.token !== undefined ? { token: admission.token } : {}) } : {}),
  });

  async function lookup(ctx: Ctx, kind: 'publish' | 'subscribe', params: { nodeGroup: string } & Guid, query: Static<typeof PublishQuery>): Promise<Location[]> {
    const transcode = kind === 'publish' && query.transcode === true;
    const chosen = await sm2Choose(ctx, services, app, kind, params, query, `sm2:${transcode ? 'transcode' : kind}`);
    const { handle, stream, name, node, admission } = chosen;
    const guid = guidOf(handle.group.scope, name);
    if (!transcode) return [located(node, guidOf(handle.group.scope, stream), admission)];
    const origin = (await oneStream(handle, name))?.origin;
    return [
      located(node, guid, admission),
      ...(origin?.serverAddress ? [{ streamGuid: guid, serverAddress: origin.serverAddress, nodeRole: 'origin', subGroup: origin.region ?? '', nodeState: origin.state ?? 'INSERVICE' }] : []),
    ];
  }

  /** A stream's servers as SM2 lists them: its origin, and with aggregate=false its transcoder. */
  function locations(v: StreamView, streamGuid: string, q: Static<typeof StatsQuery>, addresses: Map<string, string | null> | null, now: number): Location[] {
    // As long as its publisher's node says it has been up, else since it went LIVE.
    const duration = v.uptimeSeconds !== null ? v.uptimeSeconds * 1000 : v.state === 'LIVE' ? Math.max(0, now - v.since) : 0;
    const stats = (subscribers: number) => (q.stats ? { subscribers, durationMs: duration } : {});
    const out: Location[] = [];
    if (v.origin.serverAddress)
      out.push({ streamGuid, serverAddress: v.origin.serverAddress, nodeRole: 'origin', subGroup: v.origin.region ?? '', nodeState: v.origin.state ?? 'INSERVICE', ...stats(v.subscribers) });
    const t = v.transcoder;
    const address = t && addresses?.get(t.nodeId);
    if (t && address) out.push({ streamGuid, serverAddress: address, nodeRole: 'transcoder', subGroup: t.region ?? '', nodeState: t.state ?? 'INSERVICE', ...stats(0) });
    return out;
  }
  const addressesOf = async (h: GroupHandle, q: Static<typeof StatsQuery>) => (q.aggregate === false ? new Map((await allNodes(h)).map((n) => [n.id, n.address])) : null);

  const ListParams = Type.Object({ nodeGroup: GroupName });
  const routes: RouteDef[] = [
    route({
      method: 'GET',
      // Registered before /streams/stream/{nodeGroup}, which would take it: a group named
      // `node-groups` has its SM2 listing shadowed (its lookups, and our own paths, still serve).
      path: '/as/v1/streams/stream/node-groups',
      operationId: 'sm2NodeGroupNames',
      example: { response: ['default'] },
      summary: 'SM2: the node group names a client may use',
      tag: TAG,
      access,
      responses: { 200: { description: 'names', schema: Type.Array(Type.String()) }, 401: lookupErrors[401], 403: lookupErrors[403], 429: lookupErrors[429] },
      async handle(ctx) {
        rateLimit(services, await askerOf(ctx, services, app));
        ctx.body = [...services.actors.groups.values()]
          .filter((h) => !h.deleting)
          .map((h) => h.name)
          .sort();
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/streams/stream/{nodeGroup}',
      operationId: 'sm2ListStreams',
      example: { params: { nodeGroup: 'default' }, query: { stats: 'true', aggregate: 'true' } },
      summary: "SM2: a group's live streams and the servers they are on (origins; with aggregate=false, transcoders too)",
      tag: TAG,
      access,
      params: ListParams,
      query: StatsQuery,
      responses: {
        200: { description: 'stream locations', schema: Type.Array(StreamLocation) },
        401: lookupErrors[401],
        403: lookupErrors[403],
        404: problemResponse('NODE_GROUP_NOT_FOUND'),
        429: lookupErrors[429],
        503: problemResponse("NOT_READY (with Retry-After): the group's actor is restarting"),
      },
      async handle(ctx, { params, query }) {
        const asker = await askerOf(ctx, services, app);
        rateLimit(services, asker);
        const handle = groupOr404(services, params.nodeGroup);
        const { bindings } = await handle.call('counts');
        rateLimit(services, asker, Math.floor((bindings.LIVE + bindings.PENDING) / 1000));
        const [streams, addresses] = await Promise.all([allStreams(handle), addressesOf(handle, query)]);
        const now = Date.now();
        ctx.body = streams.filter((v) => v.state === 'LIVE').flatMap((v) => locations(v, guidOf(handle.group.scope, v.name), query, addresses, now));
      },
    }),
  ];
  for (const kind of ['publish', 'subscribe'] as const) {
    for (const { path, id, params } of guidRoutes(`/as/v1/streams/stream/{nodeGroup}/${kind}`, kind === 'publish' ? 'sm2Publish' : 'sm2Subscribe')) {
      routes.push(
        route({
          method: 'GET',
          path,
          operationId: id,
          example: { params: exampleGuid(id.endsWith('InRoom')), query: kind === 'publish' ? { strict: 'false', transcode: 'false', endpoints: '1' } : { strict: 'false', endpoints: '1' } },
          summary: kind === 'publish' ? 'SM2: the origin a publisher connects to (transcode=true: the transcoder, then the origin it feeds)' : 'SM2: the edge a subscriber connects to',
          tag: TAG,
          access,
          params: Type.Object({ nodeGroup: GroupName, scope: Segment, ...params, name: Segment }),
          query: kind === 'publish' ? PublishQuery : SubscribeQuery,
          responses: { 200: { description: 'the server to connect to, first', schema: Type.Array(StreamLocation) }, ...lookupErrors },
          async handle(ctx, { params: p, query }) {
            ctx.body = await lookup(ctx, kind, { ...p, ...guidOfParams(p as { scope: string; room?: string; name: string }) }, query as Static<typeof PublishQuery>);
          },
        }),
      );
    }
  }
  for (const { path, id, params } of guidRoutes('/as/v1/streams/stream/{nodeGroup}/stream', 'sm2StreamServers')) {
    routes.push(
      route({
        method: 'GET',
        path,
        operationId: id,
        example: { params: exampleGuid(id.endsWith('InRoom')), query: { aggregate: 'true' } },
        summary: "SM2: one live stream's servers (aggregate=true: the origin it is published to)",
        tag: TAG,
        access,
        params: Type.Object({ nodeGroup: GroupName, scope: Segment, ...params, name: Segment }),
        query: StatsQuery,
        responses: {
          200: { description: 'stream locations, the origin first', schema: Type.Array(StreamLocation) },
          ...lookupErrors,
          404: problemResponse('NODE_GROUP_NOT_FOUND or STREAM_NOT_FOUND (not live)'),
        },
        async handle(ctx, { params: p, query }) {
          rateLimit(services, await askerOf(ctx, services, app));
          const handle = groupOr404(services, p.nodeGroup);
          const guid = guidOfParams(p as { scope: string; room?: string; name: string });
          const stream = streamIn(handle, guid);
          // A rendition is carried with its stream: its servers are the stream's.
          let v = await oneStream(handle, stream);
          if (!v) {
            const owner = await provisionOwning(handle, stream);
            if (owner && owner.streamName !== stream) v = await oneStream(handle, owner.streamName);
          }
          if (v?.state !== 'LIVE') throw problems.notFound('STREAM_NOT_FOUND', `stream '${guidOf(handle.group.scope, stream)}' is not live in node group '${handle.name}'`);
          ctx.body = locations(v, guidOf(handle.group.scope, stream), query, await addressesOf(handle, query), Date.now());
        },
      }),
    );
  }
  return routes;
}

/** High-volume routes, logged at debug (metrics count them). */
export const QUIET_STREAM_ROUTES = ['publish', 'subscribe'].flatMap((k) => [`/as/v1/streams/stream/{nodeGroup}/${k}/{scope}/{name}`, `/as/v1/streams/stream/{nodeGroup}/${k}/{scope}/{room}/{name}`]);
