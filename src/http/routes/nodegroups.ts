// Endpoints 7 and 8: node groups with their nodes, load and streams (docs/api.md).
import Type from 'typebox';
import type { GroupCounts } from '../../model/views.js';
import type { GroupHandle } from '../../../actors/group-handle.js';
import type { NodeView } from '../../model/views.js';
import { countsTowardCapacity } from '../../policy/states.js';
import { GroupName, LoginResponse, NodeGroupDetail, NodeGroupSummary, NodeIdParam, PageQuery } from '../../schemas/api.js';
import { Problem, problems } from '../problem.js';
import { NodeGroupConfig } from '../../config/node-group-schema.js';
import { withoutSecrets } from '../../config/secrets.js';
import { nextStarts, rulesAt } from '../../policy/scaling/schedules.js';
import type { Change } from '../../nodegroups/registry.js';
import { problemResponse, route, type RouteDef } from '../route.js';
import { fail, groupOr404, iso, page, type Services } from '../services.js';
import { EXAMPLE_EDGE, EXAMPLE_GROUP, EXAMPLE_ORIGIN, exampleNodeGroup } from '../examples.js';

function summary(handle: GroupHandle, counts: GroupCounts | null) {
  const byRole: Record<string, Record<string, number>> = {};
  let total = 0;
  for (const n of counts?.nodes ?? []) {
    const states = (byRole[n.role] ??= {});
    states[n.state] = (states[n.state] ?? 0) + n.count;
    total += n.count;
  }
  const g = handle.group;
  return {
    name: g.name,
    scope: g.scope,
    platform: g.platform.type,
    regions: g.regions.map((r) => r.name),
    nodes: { total, byRole },
    load: counts?.load ?? [],
    streams: { live: counts?.bindings.LIVE ?? 0, pending: counts?.bindings.PENDING ?? 0 },
    provisions: counts?.provisions ?? 0,
    ready: handle.ready,
    status: handle.deleting ? ('deleting' as const) : ('active' as const),
  };
}

const nodeView = (n: NodeView) => ({ ...n, stateSince: iso(n.stateSince), lastHeartbeat: iso(n.lastHeartbeat) });

/** The group a change made, as the API shows it (no secrets). */
function settled(change: Change) {
  if (!change.ok) fail(change);
  return withoutSecrets(change.group);
}

export function nodeGroupRoutes(services: Services): RouteDef[] {
  const countsOf = async (h: GroupHandle) => (h.ready ? await h.call('counts').catch(() => null) : null);
  return [
    route({
      method: 'GET',
      path: '/as/v1/nodegroups',
      operationId: 'listNodeGroups',
      example: { query: { limit: '10' } },
      summary: 'Endpoint 7: every node group with its node counts by role and state, load and streams',
      description: 'Paged by name. A group whose actor is restarting is listed with ready: false and its counts empty until it is back.',
      tag: 'nodegroups',
      access: 'admin',
      query: PageQuery,
      responses: { 200: { description: 'a page of node groups, by name', schema: Type.Array(NodeGroupSummary) }, 401: problemResponse('UNAUTHORIZED'), 403: problemResponse('FORBIDDEN') },
      async handle(ctx, { query }) {
        const limit = query.limit ?? 100;
        const sorted = [...services.actors.groups.values()].filter((h) => query.after === undefined || h.name > query.after).sort((a, b) => (a.name < b.name ? -1 : 1));
        const handles = page(ctx, sorted.slice(0, limit + 1), limit, (h) => h.name);
        ctx.body = await Promise.all(handles.map(async (h) => summary(h, await countsOf(h))));
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/nodegroups/{nodeGroupName}',
      operationId: 'getNodeGroup',
      example: { params: { nodeGroupName: EXAMPLE_GROUP }, query: { limit: '100' } },
      summary: 'Endpoint 8: one node group: its config, its nodes (paged with ?limit= and ?after=) and its scaling state',
      description:
        'Each node with its state, load against its limit, parent, listeners and last heartbeat (and faultReason or problem when it has one); scaling gives, per rule, the nodes in service, starting and faulted against min and max. A group being deleted answers too.',
      tag: 'nodegroups',
      access: 'admin',
      params: Type.Object({ nodeGroupName: GroupName }),
      query: PageQuery,
      responses: {
        200: { description: 'the node group', schema: NodeGroupDetail },
        401: problemResponse('UNAUTHORIZED'),
        403: problemResponse('FORBIDDEN'),
        404: problemResponse('NODE_GROUP_NOT_FOUND'),
        503: problemResponse("NOT_READY (with Retry-After): the group's actor is restarting"),
      },
      async handle(ctx, { params, query }) {
        const handle = groupOr404(services, params.nodeGroupName, { includeDeleting: true });
        const limit = query.limit ?? 100;
        const [counts, detail] = await Promise.all([handle.call('counts'), handle.call('detail', query.after, limit + 1)]);
        const now = services.now();
        const scaling = rulesAt(handle.group.rules, handle.group.schedules, now).map((rule) => {
          const here = counts.nodes.filter((n) => n.region === rule.region && n.role === rule.role);
          const count = (pred: (state: string) => boolean) => here.filter((n) => pred(n.state)).reduce((a, n) => a + n.count, 0);
          return {
            region: rule.region,
            role: rule.role,
            min: rule.min,
            max: rule.max,
            inService: count((st) => st === 'INSERVICE'),
            pending: count((st) => st !== 'INSERVICE' && countsTowardCapacity(st as never)),
            fault: count((st) => st === 'FAULT'),
            schedules: rule.windows.map((w) => ({
              name: w.name,
              ...(w.min !== undefined ? { min: w.min } : {}),
              ...(w.max !== undefined ? { max: w.max } : {}),
              from: iso(w.from),
              until: iso(w.until),
            })),
          };
        });
        const next = new Map(nextStarts(handle.group.schedules, now).map((x) => [x.name, x.next]));
        const schedules = handle.group.schedules.map((x) => ({ name: x.name, role: x.role, region: x.region ?? null, cron: x.cron, timezone: x.timezone, next: iso(next.get(x.name) ?? null) }));
        const nodes = page(ctx, detail.nodes, limit, (n) => n.id);
        ctx.body = { ...summary(handle, counts), config: withoutSecrets(handle.group), nodeList: nodes.map(nodeView), scaling, schedules };
      },
    }),
    route({
      method: 'POST',
      path: '/as/v1/nodegroups',
      operationId: 'createNodeGroup',
      example: { body: exampleNodeGroup },
      summary: 'Create a node group: its regions, roles, rules and platform; its min nodes are created at once',
      description: 'Expressions (rank, limit, scaleOut, scaleIn) are checked here: a bad one is a 400 that names the rule, the field and the column.',
      tag: 'nodegroups',
      access: 'admin',
      body: NodeGroupConfig,
      responses: {
        201: { description: 'the node group, defaults filled in', schema: Type.Unknown() },
        400: problemResponse('VALIDATION_FAILED'),
        409: problemResponse('NODE_GROUP_EXISTS'),
        503: problemResponse('STORE_UNAVAILABLE (with Retry-After): the disk refused the write; nothing was changed'),
      },
      async handle(ctx, { body }) {
        const group = settled(await services.registry.create(body));
        ctx.status = 201;
        ctx.set('Location', `/as/v1/nodegroups/${group.name}`);
        ctx.body = group;
      },
    }),
    route({
      method: 'PUT',
      path: '/as/v1/nodegroups/{nodeGroupName}',
      operationId: 'replaceNodeGroup',
      example: { params: { nodeGroupName: 'studio' }, body: exampleNodeGroup },
      summary: "Replace a node group's definition; nodes of regions or roles it no longer has are drained",
      description:
        "The body is a whole node group, as for create, whose name must be the path's. Refused (409) while its platform would change and it has nodes, or when a region it drops still has streams or provisions.",
      tag: 'nodegroups',
      access: 'admin',
      params: Type.Object({ nodeGroupName: GroupName }),
      body: NodeGroupConfig,
      responses: {
        200: { description: 'the node group, defaults filled in', schema: Type.Unknown() },
        400: problemResponse('VALIDATION_FAILED'),
        404: problemResponse('NODE_GROUP_NOT_FOUND'),
        409: problemResponse('NODE_GROUP_CONFLICT: the platform cannot change while the group has nodes'),
        503: problemResponse("NOT_READY (the group's actor is restarting) or STORE_UNAVAILABLE, with Retry-After; nothing was changed"),
      },
      async handle(ctx, { params, body }) {
        ctx.body = settled(await services.registry.replace(params.nodeGroupName, body));
      },
    }),
    route({
      method: 'DELETE',
      path: '/as/v1/nodegroups/{nodeGroupName}',
      operationId: 'deleteNodeGroup',
      example: { params: { nodeGroupName: 'studio' } },
      summary: 'Delete a node group: 202 at once; its nodes are drained and destroyed in the background, then it is gone',
      description: 'The group is listed with status deleting until its nodes are gone, then the event nodegroup.changed (deleted) says so; its bindings and provisions go with it.',
      tag: 'nodegroups',
      access: 'admin',
      params: Type.Object({ nodeGroupName: GroupName }),
      responses: {
        202: { description: 'deletion started', schema: Type.Object({ name: Type.String(), status: Type.Literal('deleting') }) },
        404: problemResponse('NODE_GROUP_NOT_FOUND'),
        503: problemResponse('STORE_UNAVAILABLE (with Retry-After): the disk refused the write; nothing was changed'),
      },
      async handle(ctx, { params }) {
        settled(await services.registry.remove(params.nodeGroupName));
        ctx.status = 202;
        ctx.body = { name: params.nodeGroupName, status: 'deleting' };
      },
    }),
    ...(['drain', 'doom'] as const).map((action) =>
      route({
        method: 'POST',
        path: `/as/v1/nodegroups/{nodeGroupName}/nodes/{nodeId}/${action}`,
        operationId: action === 'drain' ? 'drainNode' : 'doomNode',
        example: { params: { nodeGroupName: EXAMPLE_GROUP, nodeId: EXAMPLE_EDGE } },
        summary:
          action === 'drain'
            ? 'Drain a node: no new assignments; it is retired when its connections reach zero, or after drainTimeout'
            : 'Condemn a node (DOOMED): it is destroyed at once, its viewers and publishers cut',
        description:
          action === 'drain'
            ? 'The node goes SOFT_SUNSET and its agent is told to drain; allowed from INSERVICE and STARTED (a draining node answers with its state). After drainTimeout it goes HARD_SUNSET, then it is destroyed.'
            : "Refused while the node is already being destroyed. A static node stays DOOMED until it is removed from the group's config.",
        tag: 'nodegroups',
        access: 'admin',
        params: Type.Object({ nodeGroupName: GroupName, nodeId: NodeIdParam }),
        responses: {
          202: { description: 'the node and its new state', schema: Type.Object({ nodeId: Type.String(), state: Type.String() }) },
          404: problemResponse('NODE_GROUP_NOT_FOUND or NODE_NOT_FOUND'),
          409: problemResponse("NODE_STATE_CONFLICT: not possible in the node's state"),
          503: problemResponse("NOT_READY (the group's actor is restarting) or STORE_UNAVAILABLE, with Retry-After"),
        },
        async handle(ctx, { params }) {
          const handle = groupOr404(services, params.nodeGroupName, { includeDeleting: true });
          if (!(await handle.call('hasNode', params.nodeId))) throw problems.notFound('NODE_NOT_FOUND', `node '${params.nodeId}' is not in node group '${params.nodeGroupName}'`);
          const result = await handle.call('nodeEvent', params.nodeId, { type: action }, Date.now());
          if (!result.ok) throw new Problem(409, 'NODE_STATE_CONFLICT', result.reason);
          ctx.status = 202;
          ctx.body = { nodeId: params.nodeId, state: result.state ?? 'removed' };
        },
      }),
    ),
    route({
      method: 'POST',
      path: '/as/v1/nodegroups/{nodeGroupName}/nodes/{nodeId}/token',
      operationId: 'issueNodeToken',
      example: { params: { nodeGroupName: EXAMPLE_GROUP, nodeId: EXAMPLE_ORIGIN } },
      summary: "A node token for a node's agent (static fleets; the local platform hands its agents their own)",
      description:
        "Give it to the node's agent as SWITCHYARD_NODE_TOKEN. It lasts auth.nodeTokenTtl (24 h by default) and the agent renews it through its heartbeat replies; POST …/token/revoke ends it.",
      tag: 'nodegroups',
      access: 'admin',
      params: Type.Object({ nodeGroupName: GroupName, nodeId: NodeIdParam }),
      responses: {
        200: { description: 'a node token', schema: LoginResponse },
        401: problemResponse('UNAUTHORIZED'),
        403: problemResponse('FORBIDDEN'),
        404: problemResponse('NODE_GROUP_NOT_FOUND or NODE_NOT_FOUND'),
        503: problemResponse("NOT_READY (with Retry-After): the group's actor is restarting"),
      },
      async handle(ctx, { params }) {
        const handle = groupOr404(services, params.nodeGroupName);
        if (!(await handle.call('hasNode', params.nodeId))) throw problems.notFound('NODE_NOT_FOUND', `node '${params.nodeId}' is not in node group '${params.nodeGroupName}'`);
        const ttl = services.config.auth.nodeTokenTtl;
        const gen = services.nodeTokens.generation(params.nodeGroupName, params.nodeId);
        ctx.body = { accessToken: services.signer.nodeToken(params.nodeGroupName, params.nodeId, ttl, gen), tokenType: 'Bearer', expiresIn: Math.floor(ttl / 1000) };
      },
    }),
    route({
      method: 'POST',
      path: '/as/v1/nodegroups/{nodeGroupName}/nodes/{nodeId}/token/revoke',
      operationId: 'revokeNodeTokens',
      example: { params: { nodeGroupName: EXAMPLE_GROUP, nodeId: EXAMPLE_ORIGIN }, response: { nodeId: EXAMPLE_ORIGIN, generation: 1 } },
      summary: 'Revoke every token issued so far to a node: its heartbeats are refused (401) and its node channel closes (1008 REVOKED)',
      description:
        "For a node whose token leaked. Tokens issued after this call work (POST …/token). A node that cannot heartbeat goes FAULT after nodeTimeout and, on a managed platform, is replaced. A destroyed node's tokens are revoked by themselves.",
      tag: 'nodegroups',
      access: 'admin',
      params: Type.Object({ nodeGroupName: GroupName, nodeId: NodeIdParam }),
      responses: {
        200: { description: 'revoked; `generation` is what tokens issued from now on carry', schema: Type.Object({ nodeId: Type.String(), generation: Type.Integer() }) },
        401: problemResponse('UNAUTHORIZED'),
        403: problemResponse('FORBIDDEN'),
        404: problemResponse('NODE_GROUP_NOT_FOUND or NODE_NOT_FOUND'),
        503: problemResponse("NOT_READY (the group's actor is restarting) or STORE_UNAVAILABLE, with Retry-After"),
      },
      async handle(ctx, { params }) {
        const handle = groupOr404(services, params.nodeGroupName, { includeDeleting: true });
        if (!(await handle.call('hasNode', params.nodeId))) throw problems.notFound('NODE_NOT_FOUND', `node '${params.nodeId}' is not in node group '${params.nodeGroupName}'`);
        const generation = await services.nodeTokens.revoke(params.nodeGroupName, params.nodeId);
        ctx.log.info({ group: params.nodeGroupName, nodeId: params.nodeId, generation }, 'node tokens revoked');
        ctx.body = { nodeId: params.nodeId, generation };
      },
    }),
  ];
}
