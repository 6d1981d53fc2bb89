// Endpoint 3 (register an ABR ladder) and the added read, list, replace and delete (docs/api.md).
import Type from 'typebox';
import type { Provision } from '../../domain/records.js';
import { unknownRegion } from '../../domain/regions.js';
import { GroupName, PageQuery, ProvisionBody, StoredProvision, StreamName } from '../../schemas/api.js';
import type { FieldProblem } from '../../schemas/problem.js';
import { problems } from '../problem.js';
import { problemResponse, route, type RouteDef } from '../route.js';
import { fail, groupOr404, iso, page, type Services } from '../services.js';
import { EXAMPLE_GROUP, exampleProvision } from '../examples.js';

type Body = Type.Static<typeof ProvisionBody>;

/** Rendition names and levels are unique within a provision (JSON Schema cannot say so per field). */
export function uniqueRenditions(body: Body): FieldProblem[] {
  const out: FieldProblem[] = [];
  const names = new Map<string, number>();
  const levels = new Map<number, number>();
  body.streams.forEach((r, i) => {
    if (names.has(r.name)) out.push({ path: `body.streams[${i}].name`, message: `repeats the name of streams[${names.get(r.name)}]` });
    else names.set(r.name, i);
    if (levels.has(r.level)) out.push({ path: `body.streams[${i}].level`, message: `repeats the level of streams[${levels.get(r.level)}]` });
    else levels.set(r.level, i);
  });
  return out;
}

const view = (group: string, p: Provision) => ({
  nodeGroup: group,
  streamName: p.streamName,
  region: p.region,
  streams: p.streams,
  createdAt: iso(p.createdAt),
  updatedAt: iso(p.updatedAt),
});

const errors = {
  400: problemResponse('VALIDATION_FAILED: a bad field, a region not in the group, a rendition name already in use'),
  401: problemResponse('UNAUTHORIZED'),
  403: problemResponse('FORBIDDEN: not an admin token'),
  404: problemResponse('NODE_GROUP_NOT_FOUND or PROVISION_NOT_FOUND'),
  503: problemResponse("NOT_READY (the group's actor is restarting) or STORE_UNAVAILABLE (a write the disk refused; nothing was changed), with Retry-After"),
};

export function provisionRoutes(services: Services): RouteDef[] {
  /** The region against the group's, named with the schema's findings; the actor checks again. */
  const regionOfGroup = (params: Record<string, string>, body: unknown): FieldProblem[] => {
    const group = params.nodeGroup ? services.actors.group(params.nodeGroup)?.group : undefined;
    const region = (body as { region?: unknown } | null)?.region;
    const problem = group && typeof region === 'string' ? unknownRegion(group.regions, region) : null;
    return problem ? [{ path: 'body.region', message: problem }] : [];
  };
  const GroupParams = Type.Object({ nodeGroup: GroupName });
  const OneParams = Type.Object({ nodeGroup: GroupName, streamName: StreamName });
  return [
    route({
      method: 'POST',
      path: '/as/v1/provision/{nodeGroup}',
      operationId: 'createProvision',
      example: { params: { nodeGroup: EXAMPLE_GROUP }, body: exampleProvision },
      summary: 'Endpoint 3: register the ABR ladder of a stream name',
      description: 'Must exist before the stream is published with transcode=true. Bitrates are in bits per second. Rendition names must not be used by another provision.',
      tag: 'provisions',
      access: 'admin',
      params: GroupParams,
      body: ProvisionBody,
      refine: uniqueRenditions,
      against: regionOfGroup,
      responses: { 201: { description: 'the stored provision', schema: StoredProvision }, ...errors, 409: problemResponse('PROVISION_EXISTS') },
      async handle(ctx, { params, body }) {
        const result = await groupOr404(services, params.nodeGroup).call('putProvision', body, 'create');
        if (!result.ok) fail(result);
        ctx.status = 201;
        ctx.set('Location', `/as/v1/provision/${params.nodeGroup}/${body.streamName}`);
        ctx.body = view(params.nodeGroup, result.provision);
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/provision/{nodeGroup}',
      operationId: 'listProvisions',
      example: { params: { nodeGroup: EXAMPLE_GROUP }, query: { limit: '100' } },
      summary: "A node group's provisions, by stream name",
      description: 'Paged by stream name with ?limit= (at most 1000) and ?after=; a Link rel="next" header names the next page.',
      tag: 'provisions',
      access: 'admin',
      params: GroupParams,
      query: PageQuery,
      responses: { 200: { description: 'a page of provisions', schema: Type.Array(StoredProvision) }, ...errors },
      async handle(ctx, { params, query }) {
        const limit = query.limit ?? 100;
        const list = await groupOr404(services, params.nodeGroup).call('listProvisions', query.after, limit + 1);
        ctx.body = page(ctx, list, limit, (p) => p.streamName).map((p) => view(params.nodeGroup, p));
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/provision/{nodeGroup}/{streamName}',
      operationId: 'getProvision',
      example: { params: { nodeGroup: EXAMPLE_GROUP, streamName: 'show' } },
      summary: 'One provision',
      description: 'The ladder as stored, with when it was created and last replaced.',
      tag: 'provisions',
      access: 'admin',
      params: OneParams,
      responses: { 200: { description: 'the provision', schema: StoredProvision }, ...errors },
      async handle(ctx, { params }) {
        const p = await groupOr404(services, params.nodeGroup).call('getProvision', params.streamName);
        if (!p) throw problems.notFound('PROVISION_NOT_FOUND', `stream '${params.streamName}' has no provision in node group '${params.nodeGroup}'`);
        ctx.body = view(params.nodeGroup, p);
      },
    }),
    route({
      method: 'PUT',
      path: '/as/v1/provision/{nodeGroup}/{streamName}',
      operationId: 'replaceProvision',
      example: { params: { nodeGroup: EXAMPLE_GROUP, streamName: 'show' }, body: exampleProvision },
      summary: 'Replace a provision; a stream being transcoded picks the new ladder up at its next publish',
      description: "The body is a whole provision, as for create, whose streamName must be the path's; rendition names must not be used by another provision.",
      tag: 'provisions',
      access: 'admin',
      params: OneParams,
      body: ProvisionBody,
      refine: uniqueRenditions,
      against: regionOfGroup,
      responses: { 200: { description: 'the stored provision', schema: StoredProvision }, ...errors },
      async handle(ctx, { params, body }) {
        if (body.streamName !== params.streamName) {
          throw problems.validation([{ path: 'body.streamName', message: `must be the stream name of the path ('${params.streamName}')` }]);
        }
        const result = await groupOr404(services, params.nodeGroup).call('putProvision', body, 'replace');
        if (!result.ok) fail(result);
        ctx.body = view(params.nodeGroup, result.provision);
      },
    }),
    route({
      method: 'DELETE',
      path: '/as/v1/provision/{nodeGroup}/{streamName}',
      operationId: 'deleteProvision',
      example: { params: { nodeGroup: EXAMPLE_GROUP, streamName: 'show' } },
      summary: 'Delete a provision; current viewers of a live ABR stream keep their renditions until it ends',
      description: 'Publishes with transcode=true are refused from then on (404 PROVISION_NOT_FOUND); a stream already being transcoded keeps its renditions until it ends.',
      tag: 'provisions',
      access: 'admin',
      params: OneParams,
      responses: { 204: { description: 'deleted' }, ...errors },
      async handle(ctx, { params }) {
        const result = await groupOr404(services, params.nodeGroup).call('deleteProvision', params.streamName);
        if (!result.ok) fail(result);
        ctx.status = 204;
      },
    }),
  ];
}
