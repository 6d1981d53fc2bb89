// Endpoint 6: the live and pending streams of every node group (docs/api.md), paged across
// groups in (group, stream) order; the cursor is "group/stream".
import Type from 'typebox';
import type { StreamView } from '../../model/views.js';
import { GroupName, StreamName, StreamStatsSchema, StreamsQuery, StreamView as StreamViewSchema } from '../../schemas/api.js';
import { problemResponse, route, type RouteDef } from '../route.js';
import { fail, groupOr404, iso, page, type Services } from '../services.js';
import { problems } from '../problem.js';
import { EXAMPLE_GROUP } from '../examples.js';

const view = (v: StreamView) => ({ ...v, boundAt: iso(v.boundAt), since: iso(v.since) });

export function streamRoutes(services: Services): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/as/v1/streams',
      operationId: 'listStreams',
      example: { query: { nodeGroup: EXAMPLE_GROUP, limit: '100' } },
      summary: 'Endpoint 6: streams bound to an origin (PENDING until the origin reports them, then LIVE), with their nodes and viewer counts',
      description:
        'Every node group\'s streams, or one group\'s with ?nodeGroup=; each with its origin (and transcoder), the edges that carry it and the viewers each reported. Paged in (group, stream) order: ?after= takes "group/stream".',
      tag: 'streams',
      access: 'app',
      query: StreamsQuery,
      responses: {
        200: { description: 'a page of streams; Link rel="next" when more remain', schema: Type.Array(StreamViewSchema) },
        400: problemResponse('VALIDATION_FAILED'),
        404: problemResponse('NODE_GROUP_NOT_FOUND'),
        503: problemResponse("NOT_READY (with Retry-After): a group's actor is restarting"),
      },
      async handle(ctx, { query }) {
        const limit = query.limit ?? 100;
        const groups = query.nodeGroup ? [groupOr404(services, query.nodeGroup)] : [...services.actors.groups.values()].sort((a, b) => (a.name < b.name ? -1 : 1));
        const slash = query.after?.indexOf('/') ?? -1;
        const afterGroup = query.after === undefined ? undefined : slash < 0 ? query.after : query.after.slice(0, slash);
        const afterStream = slash < 0 ? undefined : query.after!.slice(slash + 1);
        const out: StreamView[] = [];
        for (const g of groups) {
          if (out.length > limit) break;
          if (afterGroup !== undefined && g.name < afterGroup) continue;
          const after = g.name === afterGroup ? afterStream : undefined;
          out.push(...(await g.call('listStreams', after, limit + 1 - out.length)));
        }
        ctx.body = page(ctx, out, limit, (v) => `${v.nodeGroup}/${v.name}`).map(view);
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/streams/{nodeGroup}/{streamName}/stats',
      operationId: 'streamStats',
      example: { params: { nodeGroup: EXAMPLE_GROUP, streamName: 'cam1' } },
      summary: "A stream's statistics: its publisher's bit rate, codecs, resolution and uptime; its viewers per node",
      description:
        "From what the stream's nodes said in their last heartbeats (a couple of seconds old at most): the publisher's node (the transcoder of a transcoded stream), then each node carrying it. Nodes say what they can: nginx-rtmp nodes give rates, codecs and resolution; werift and Janus nodes rates and codecs (a Janus edge its rate out only); simulated nodes give viewers and uptime. A rendition's name gives that rendition's viewers; the stream's name lists its renditions as the origin receives them.",
      tag: 'streams',
      access: 'app',
      params: Type.Object({ nodeGroup: GroupName, streamName: StreamName }),
      responses: {
        200: { description: "the stream's statistics", schema: StreamStatsSchema },
        400: problemResponse('VALIDATION_FAILED'),
        404: problemResponse('NODE_GROUP_NOT_FOUND or STREAM_NOT_FOUND'),
        503: problemResponse('NOT_READY'),
      },
      async handle(ctx, { params }) {
        const stats = await groupOr404(services, params.nodeGroup).call('streamStats', params.streamName);
        if (!stats) throw problems.notFound('STREAM_NOT_FOUND', `stream '${params.streamName}' is not bound in node group '${params.nodeGroup}'`);
        ctx.body = stats;
      },
    }),
    route({
      method: 'POST',
      path: '/as/v1/streams/{nodeGroup}/{streamName}/end',
      operationId: 'endStream',
      example: { params: { nodeGroup: EXAMPLE_GROUP, streamName: 'cam1' } },
      summary: 'End a stream: unbind it now, and disconnect its publisher at its origin',
      description:
        "The binding goes at once (stream.unbound). With admission on, the stream's origin (and transcoder) drop its publisher at their next heartbeat and refuse publish tokens issued before: to publish again, a client looks it up anew. A rendition's name ends its stream.",
      tag: 'streams',
      access: 'admin',
      params: Type.Object({ nodeGroup: GroupName, streamName: StreamName }),
      responses: {
        204: { description: 'ended' },
        400: problemResponse('VALIDATION_FAILED'),
        404: problemResponse('NODE_GROUP_NOT_FOUND or STREAM_NOT_FOUND'),
        503: problemResponse('NOT_READY or STORE_UNAVAILABLE'),
      },
      async handle(ctx, { params }) {
        const result = await groupOr404(services, params.nodeGroup).call('endStream', params.streamName);
        if (!result.ok) fail(result);
        ctx.status = 204;
      },
    }),
  ];
}
