// SM2's provision service: ABR ladders posted as an array of ProvisionRequests, read, listed and
// deleted by `scope/name` (docs/migrating-from-red5-sm2.md). Each becomes one of our provisions
// through the group actor's own calls, checked as ours are (unique rendition names and levels,
// names not in use, the region).
import Type from 'typebox';
import type { GroupHandle } from '../../../actors/group-handle.js';
import { GroupName } from '../../schemas/api.js';
import { Problem, problems } from '../../http/problem.js';
import type { FieldProblem } from '../../schemas/problem.js';
import { uniqueRenditions } from '../../http/routes/provisions.js';
import { problemResponse, route, type RouteDef } from '../../http/route.js';
import { groupOr404, type Services } from '../../http/services.js';
import { allProvisions } from './group-reads.js';
import { guidOf, SEGMENT_DESCRIPTION, SEGMENT_PATTERN, streamOf } from './names.js';
import { ProvisionRequests, ProvisionView, toOurs, toSm2, type OurProvision } from './provisions.js';
import { TAG } from './stream-routes.js';

const Segment = Type.String({ pattern: SEGMENT_PATTERN, description: SEGMENT_DESCRIPTION });

const errors = {
  400: problemResponse("VALIDATION_FAILED: a bad field, a guid outside the group's scope, a region not in the group, a rendition name in use"),
  404: problemResponse('NODE_GROUP_NOT_FOUND or PROVISION_NOT_FOUND'),
  503: problemResponse("NOT_READY (the group's actor is restarting) or STORE_UNAVAILABLE (nothing was changed), with Retry-After"),
};

/** Our paths in a provision's problems (`body.streams[0].name`) as SM2's (`body[2].streams[0].streamGuid`). */
function sm2Path(path: string, index: number): string {
  return path
    .replace(/^body\.streamName/, `body[${index}].provisionGuid`)
    .replace(/^body\./, `body[${index}].`)
    .replace(/\.name$/, '.streamGuid')
    .replace(/\.level$/, '.abrLevel');
}

const example = [
  {
    provisionGuid: 'live/concert',
    messageType: 'ProvisionCommand',
    streams: [
      { streamGuid: 'live/concert_1', abrLevel: 1, videoParams: { videoWidth: 1280, videoHeight: 720, videoBitRate: 2_500_000 } },
      { streamGuid: 'live/concert_2', abrLevel: 2, videoParams: { videoWidth: 640, videoHeight: 360, videoBitRate: 800_000 } },
    ],
  },
];

export function provisionRoutes(services: Services): RouteDef[] {
  const GuidParams = { nodeGroup: GroupName, scope: Segment };
  const one = (h: GroupHandle, p: { scope: string; room?: string; name: string }) => {
    const parsed = streamOf({ scope: p.scope, ...(p.room !== undefined ? { room: p.room } : {}), name: p.name }, h.group.scope);
    if (!parsed.ok) throw problems.validation(parsed.errors);
    return parsed.stream;
  };
  const missing = (h: GroupHandle, stream: string) => problems.notFound('PROVISION_NOT_FOUND', `no provision '${guidOf(h.group.scope, stream)}' in node group '${h.name}'`);

  const routes: RouteDef[] = [
    route({
      method: 'POST',
      path: '/as/v1/streams/provision/{nodeGroup}',
      operationId: 'sm2CreateProvisions',
      example: { params: { nodeGroup: 'default' }, body: example, response: { result: 'CREATED' } },
      summary: "SM2: register ABR ladders (an array of ProvisionRequests); each is a provision of its guid's stream",
      description:
        "No region is sent: the renditions go to an origin nearest the group's first region unless a request names one. Frame rate 30 and audio 128 kbit/s where SM2 says nothing. All or none: when one is refused, those this call created before it are deleted again.",
      tag: TAG,
      access: 'admin',
      params: Type.Object({ nodeGroup: GroupName }),
      body: ProvisionRequests,
      responses: {
        201: { description: 'created', schema: Type.Object({ result: Type.Literal('CREATED') }) },
        ...errors,
        409: problemResponse('PROVISION_EXISTS: "Provision already exists" for one of the guids'),
      },
      async handle(ctx, { params, body }) {
        const handle = groupOr404(services, params.nodeGroup);
        const translated = toOurs(body, handle.group.scope, handle.group.regions[0]!.name);
        if (!translated.ok) throw problems.validation(translated.errors);
        const problemsOf = (p: OurProvision, i: number): FieldProblem[] => uniqueRenditions(p).map((e) => ({ path: sm2Path(e.path, i), message: e.message }));
        const invalid = translated.provisions.flatMap(problemsOf);
        if (invalid.length > 0) throw problems.validation(invalid);
        // Checked first, so that a duplicate changes nothing (the actor checks again as it writes).
        for (const p of translated.provisions) {
          if (await handle.call('getProvision', p.streamName))
            throw new Problem(409, 'PROVISION_EXISTS', `Provision already exists: '${guidOf(handle.group.scope, p.streamName)}' in node group '${handle.name}'`);
        }
        const created: string[] = [];
        for (const [i, p] of translated.provisions.entries()) {
          const result = await handle.call('putProvision', p, 'create');
          if (result.ok) {
            created.push(p.streamName);
            continue;
          }
          // All or none: the ones this call made go again (each delete is its own commit).
          for (const name of created) await handle.call('deleteProvision', name).catch(() => undefined);
          const fields = result.errors?.map((e) => ({ path: sm2Path(e.path, i), message: e.message }));
          if (fields) throw problems.validation(fields);
          throw new Problem(
            result.status,
            result.code,
            result.code === 'PROVISION_EXISTS' ? `Provision already exists: '${guidOf(handle.group.scope, p.streamName)}'` : result.detail,
            result.retryAfter !== undefined ? { retryAfter: result.retryAfter } : {},
          );
        }
        ctx.status = 201;
        ctx.body = { result: 'CREATED' };
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/streams/provision/{nodeGroup}',
      operationId: 'sm2ListProvisions',
      example: { params: { nodeGroup: 'default' } },
      summary: "SM2: a group's provisions",
      tag: TAG,
      access: 'admin',
      params: Type.Object({ nodeGroup: GroupName }),
      responses: { 200: { description: 'every provision', schema: Type.Array(ProvisionView) }, ...errors },
      async handle(ctx, { params }) {
        const handle = groupOr404(services, params.nodeGroup);
        ctx.body = (await allProvisions(handle)).map((p) => toSm2(p, handle.group.scope));
      },
    }),
  ];
  for (const [path, id, Room] of [
    ['/as/v1/streams/provision/{nodeGroup}/{scope}/{name}', '', {}],
    ['/as/v1/streams/provision/{nodeGroup}/{scope}/{room}/{name}', 'InRoom', { room: Segment }],
  ] as const) {
    const params = Type.Object({ ...GuidParams, ...Room, name: Segment });
    const exampleParams = { nodeGroup: 'default', scope: 'live', ...(id ? { room: 'room1' } : {}), name: 'concert' };
    routes.push(
      route({
        method: 'GET',
        path,
        operationId: `sm2GetProvision${id}`,
        example: { params: exampleParams },
        summary: 'SM2: one provision, by its guid',
        tag: TAG,
        access: 'admin',
        params,
        responses: { 200: { description: 'the provision', schema: ProvisionView }, ...errors },
        async handle(ctx, { params: p }) {
          const handle = groupOr404(services, p.nodeGroup);
          const stream = one(handle, p as { scope: string; room?: string; name: string });
          const found = await handle.call('getProvision', stream);
          if (!found) throw missing(handle, stream);
          ctx.body = toSm2(found, handle.group.scope);
        },
      }),
      route({
        method: 'DELETE',
        path,
        operationId: `sm2DeleteProvision${id}`,
        example: { params: exampleParams },
        summary: 'SM2: delete a provision; viewers of a live ABR stream keep their renditions until it ends',
        tag: TAG,
        access: 'admin',
        params,
        responses: { 200: { description: 'deleted', schema: Type.Object({ result: Type.Literal('DELETED') }) }, ...errors },
        async handle(ctx, { params: p }) {
          const handle = groupOr404(services, p.nodeGroup);
          const stream = one(handle, p as { scope: string; room?: string; name: string });
          const result = await handle.call('deleteProvision', stream);
          if (!result.ok)
            throw result.code === 'PROVISION_NOT_FOUND'
              ? missing(handle, stream)
              : new Problem(result.status, result.code, result.detail, result.retryAfter !== undefined ? { retryAfter: result.retryAfter } : {});
          ctx.body = { result: 'DELETED' };
        },
      }),
    );
  }
  return routes;
}
