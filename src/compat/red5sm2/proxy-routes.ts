// SM2's WebRTC proxy (docs/migrating-from-red5-sm2.md, "WebRTC"): the Red5 WebRTC SDK's
// WHIPClient and WHEPClient, given `endpoint: https://<host>/as/v1/proxy/whip/<scope>/<name>`
// (or `/whep/`), POST their offer there with their `connectionParams` as the query: `nodeGroup`,
// `transcode`, `subgroup`/`region`, `strict`, `requestId`, `signal`, `mode`, `keyFramerate`,
// `doNotSwitch`, `host`, and whatever the app adds for its own auth. The node is chosen as SM2's
// lookups choose it (sm2Choose), and the exchange is our proxy's (src/http/proxy): a Location on
// the proxy, never one naming a node the client could change.
import Type, { type Static } from 'typebox';
import { SDP_TYPE } from '../../domain/sdp.js';
import { GroupName } from '../../schemas/api.js';
import { forwardOffer, PROXY_CORS, readOffer, requireServed, type WebRtcProtocol } from '../../http/proxy/exchange.js';
import { EXAMPLE_OFFER, offerResponses, preflight } from '../../http/proxy/routes.js';
import { route, type RouteDef } from '../../http/route.js';
import type { Services } from '../../http/services.js';
import type { Check, Guard } from './access.js';
import { SEGMENT_DESCRIPTION, SEGMENT_PATTERN } from './names.js';
import { sm2Choose, TAG } from './stream-routes.js';

const Segment = Type.String({ pattern: SEGMENT_PATTERN, description: SEGMENT_DESCRIPTION });
const RegionList = Type.String({ pattern: '^[A-Za-z0-9._-]{1,32}(,[A-Za-z0-9._-]{1,32}){0,63}$', description: 'comma-separated regions to try first, in order' });
const Text = (description: string) => Type.Optional(Type.String({ maxLength: 256, description }));

/** SM2's query on its proxy's POSTs: its own parameters, and the app's connectionParams (strings, bounded in number and size). */
const ProxyQuery = Type.Object(
  {
    nodeGroup: Type.Optional(GroupName),
    transcode: Type.Optional(Type.Boolean({ description: 'WHIP: true asks for a transcoder (served only where roles.transcoder.serves says whip)' })),
    subgroup: Type.Optional(RegionList),
    region: Type.Optional(RegionList),
    strict: Type.Optional(Type.Boolean({ description: 'true: only the regions asked for (or the nearest); 503 instead of falling back' })),
    credential: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: "Switchyard's own: passed on to the group's admission webhook" })),
    token: Text("an app's token among its connectionParams: passed on to the group's admission webhook when there is no credential"),
    host: Text('accepted and not used: the proxy chooses the node (a client never names one)'),
    requestId: Text("the SDK's id of the client: accepted"),
    signal: Type.Optional(Type.Boolean({ description: 'accepted: the nodes add no data channel' })),
    mode: Text('accepted (live, record, append): the nodes record nothing'),
    keyFramerate: Type.Optional(Type.Integer({ minimum: 0, maximum: 3_600_000, description: 'accepted' })),
    doNotSwitch: Type.Optional(Type.Boolean({ description: 'accepted' })),
  },
  { additionalProperties: Type.String({ maxLength: 1024 }), maxProperties: 40 },
);
type ProxyQuery = Static<typeof ProxyQuery>;

export function proxyRoutes(services: Services, guard: Guard): RouteDef[] {
  const access = services.config.compat.red5sm2.anonymousLookups ? 'public' : 'app';
  let appGuard: Check | undefined;
  const app: Check = (ctx, next) => (appGuard ??= guard('app'))(ctx, next);
  const routes: RouteDef[] = [];
  for (const protocol of ['whip', 'whep'] as const satisfies readonly WebRtcProtocol[]) {
    for (const room of [false, true]) {
      const path = `/as/v1/proxy/${protocol}/{scope}${room ? '/{room}' : ''}/{name}`;
      const params = Type.Object({ scope: Segment, ...(room ? { room: Segment } : {}), name: Segment });
      const id = `sm2Proxy${protocol === 'whip' ? 'Whip' : 'Whep'}${room ? 'InRoom' : ''}`;
      routes.push(
        route({
          method: 'POST',
          path,
          operationId: id,
          summary: `SM2: ${protocol === 'whip' ? 'publish with WHIP' : 'play with WHEP'} through the proxy (the Red5 WebRTC SDK's ${protocol === 'whip' ? 'WHIPClient' : 'WHEPClient'} with \`endpoint\` here)`,
          description: "connectionParams arrive as the query; nodeGroup names the group (else the default group). The answer is the node's SDP answer with a Location on this proxy.",
          tag: TAG,
          access,
          cors: PROXY_CORS,
          params,
          query: ProxyQuery,
          rawBody: { contentType: SDP_TYPE, description: "the SDK's SDP offer, at most 64 KiB", example: EXAMPLE_OFFER },
          example: { params: { scope: 'live', ...(room ? { room: 'room1' } : {}), name: 'cam1' }, query: { nodeGroup: 'default', requestId: 'subscriber-1b31' } },
          responses: offerResponses('UNAUTHORIZED: a token is required (compat.red5sm2.anonymousLookups is off), or the one sent does not verify'),
          async handle(ctx, { params: p, query }) {
            const q = query as ProxyQuery;
            const guid = p as { scope: string; room?: string; name: string };
            const group = q.nodeGroup ?? services.config.defaultNodeGroup;
            const offer = await readOffer(ctx);
            const kind = protocol === 'whip' ? 'publish' : 'subscribe';
            const { handle, name, node, admission } = await sm2Choose(
              ctx,
              services,
              app,
              kind,
              { nodeGroup: group, ...guid },
              { ...q, credential: q.credential ?? q.token },
              `sm2:proxy:${protocol}`,
              (h) => requireServed(h, protocol, q.transcode === true),
            );
            await forwardOffer(ctx, services, handle, protocol, name, offer, { ...node, ...admission });
          },
        }),
      );
      routes.push(
        preflight(
          path,
          `${id}Options`,
          `SM2: CORS preflight of the ${protocol.toUpperCase()} proxy`,
          { 'Accept-Post': SDP_TYPE },
          { scope: 'live', ...(room ? { room: 'room1' } : {}), name: 'cam1' },
          TAG,
          params,
        ),
      );
    }
  }
  return routes;
}
