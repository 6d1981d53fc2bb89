// SM2's auth and admin services (docs/migrating-from-red5-sm2.md): a token for HTTP Basic
// credentials (our users, our throttling, our tokens), the health probe its Terraform installer
// polls, and node groups: names, one group's config, its nodes' status, create and delete, through
// the same registry as /as/v1/nodegroups.
import { setTimeout as sleep } from 'node:timers/promises';
import Type from 'typebox';
import { GroupName } from '../../schemas/api.js';
import { clientAddress } from '../../http/client-address.js';
import { Problem, problems } from '../../http/problem.js';
import { problemResponse, route, type RouteDef } from '../../http/route.js';
import { groupOr404, type Services } from '../../http/services.js';
import { basicCredentials } from './access.js';
import { allNodes } from './group-reads.js';
import { NodeGroupConfig, toOurs, toSm2 } from './nodegroup-config.js';
import { TAG } from './stream-routes.js';

const exampleConfig = {
  name: 'sm2-group',
  cloudPlatform: 'AWS',
  roles: { origin: { name: 'origin', capabilities: ['PUBLISH'] }, edge: { name: 'edge', parentRoleName: 'origin', capabilities: ['SUBSCRIBE'] } },
  groups: {
    'us-east-1': {
      subGroupName: 'us-east-1',
      groupType: 'main',
      rulesByRole: {
        origin: {
          nodeRoleName: 'origin',
          min: '0',
          max: '4',
          increment: 1,
          outExpression: 'avg(connections.publisher) > 12',
          inExpression: 'avg(connections.publisher) < 2',
          capacityRankingExpression: 'connections.publisher',
          capacityLimitExpression: '20',
        },
        edge: {
          nodeRoleName: 'edge',
          min: '0',
          max: '8',
          increment: 1,
          outExpression: 'avg(connections.subscriber) > 120',
          inExpression: 'avg(connections.subscriber) < 20',
          capacityRankingExpression: 'connections.subscriber',
          capacityLimitExpression: '200',
        },
      },
    },
  },
};

const GroupView = Type.Object({
  name: Type.String(),
  cloudPlatform: Type.String(),
  isScalingPaused: Type.Boolean(),
  roles: Type.Record(Type.String(), Type.Unknown()),
  groups: Type.Record(Type.String(), Type.Unknown()),
});
const NodeStatus = Type.Object({
  nodeEvent: Type.Object(
    {
      nodeId: Type.String(),
      nodeGroupName: Type.String(),
      subGroupName: Type.String(),
      nodeRoleName: Type.String(),
      publicIp: Type.Union([Type.String(), Type.Null()]),
      privateIp: Type.Union([Type.String(), Type.Null()]),
    },
    { additionalProperties: true, description: 'with metrics=true: connections.publisher, connections.subscriber, load, lastHeartbeat' },
  ),
  scalingEvent: Type.Object({ nodeId: Type.String(), nodeGroupName: Type.String(), subGroupName: Type.String(), nodeRoleName: Type.String(), state: Type.String() }),
});

export function adminRoutes(services: Services): RouteDef[] {
  const admit = async (username: string, address: string) => {
    const verdict = services.throttle.before(username, address);
    if ('refuse' in verdict)
      throw new Problem(429, 'RATE_LIMITED', 'too many failed logins from this address; wait before trying again', { retryAfter: Math.max(1, Math.ceil(verdict.refuse / 1000)) });
    if (verdict.delay > 0) await sleep(verdict.delay);
  };
  const GroupParams = Type.Object({ nodeGroupName: GroupName });
  const StatusQuery = Type.Object({ metrics: Type.Optional(Type.Boolean({ description: "true: with each node's connections and load" })) }, { additionalProperties: false });
  const statusRoute = (path: string, operationId: string) =>
    route({
      method: 'GET',
      path,
      operationId,
      example: { params: { nodeGroupName: 'default' } },
      summary: "SM2: each node's state (scalingEvent.state) and addresses (nodeEvent): what its Terraform installer polls until every node is INSERVICE",
      tag: TAG,
      access: 'admin',
      params: GroupParams,
      query: StatusQuery,
      responses: {
        200: { description: 'one element per node', schema: Type.Array(NodeStatus) },
        404: problemResponse('NODE_GROUP_NOT_FOUND'),
        503: problemResponse("NOT_READY (with Retry-After): the group's actor is restarting"),
      },
      async handle(ctx, { params, query }) {
        const handle = groupOr404(services, params.nodeGroupName, { includeDeleting: true });
        ctx.body = (await allNodes(handle)).map((n) => {
          const common = { nodeId: n.id, nodeGroupName: handle.name, subGroupName: n.region, nodeRoleName: n.role };
          const privateIp = n.platform.type === 'terraform' ? (n.platform.privateAddress ?? n.address) : n.address;
          const metrics = query.metrics ? { 'connections.publisher': n.connections.publisher, 'connections.subscriber': n.connections.subscriber, load: n.load, lastHeartbeat: n.lastHeartbeat } : {};
          return { nodeEvent: { ...common, publicIp: n.address, privateIp, ...metrics }, scalingEvent: { ...common, state: n.state } };
        });
      },
    });

  return [
    route({
      method: 'PUT',
      path: '/as/v1/auth/login',
      operationId: 'sm2Login',
      example: { response: { token: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9…' } },
      summary: 'SM2: a bearer token for Authorization: Basic base64(user:password); no body',
      description: "The token is ours: it works on SM2's paths and on ours, for the user's role. Failed logins are throttled as POST /as/v1/auth/login's are.",
      tag: TAG,
      access: 'public',
      responses: {
        200: { description: 'a token', schema: Type.Object({ token: Type.String() }) },
        401: problemResponse('INVALID_CREDENTIALS: no or malformed Basic credentials, or a wrong user name or password'),
        429: problemResponse('RATE_LIMITED (with Retry-After): too many failed logins'),
      },
      async handle(ctx) {
        const credentials = basicCredentials(ctx.get('authorization'));
        if (!credentials) throw problems.badCredentials('send Authorization: Basic base64(user:password)');
        const { username, password } = credentials;
        const address = clientAddress(ctx, services.config.server.trustProxy);
        await admit(username, address);
        const user = await services.users.check(username, password);
        if (!user) {
          services.throttle.failed(username, address);
          // A user name is logged only when it is one: a password typed there would land in the log.
          ctx.log.warn(services.users.get(username) ? { user: username, address } : { address }, 'login failed');
          throw problems.badCredentials('wrong user name or password');
        }
        services.throttle.succeeded(username, address);
        ctx.body = { token: services.signer.sign({ sub: user.username, role: user.role, ver: user.ver }, services.config.auth.tokenTtl) };
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/admin/healthz',
      operationId: 'sm2Healthz',
      example: { response: { status: 'ok' } },
      summary: 'SM2: liveness, as /as/v1/healthz',
      tag: TAG,
      access: 'public',
      responses: { 200: { description: 'alive', schema: Type.Object({ status: Type.Literal('ok') }) } },
      handle(ctx) {
        ctx.body = { status: 'ok' };
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/admin/nodegroup',
      operationId: 'sm2ListNodeGroups',
      example: { response: ['default'] },
      summary: 'SM2: the names of the node groups (not those being deleted)',
      tag: TAG,
      access: 'admin',
      responses: { 200: { description: 'names', schema: Type.Array(Type.String()) } },
      handle(ctx) {
        ctx.body = [...services.actors.groups.values()]
          .filter((h) => !h.deleting)
          .map((h) => h.name)
          .sort();
      },
    }),
    route({
      method: 'POST',
      path: '/as/v1/admin/nodegroup',
      operationId: 'sm2CreateNodeGroup',
      example: { body: exampleConfig },
      summary: "SM2: create a node group from SM2's NodeGroupConfig; 200, as its installer expects",
      description:
        'Roles, sub-groups (regions, with coordinates 0,0: the configured order) and their rules become ours; min and max may be strings; outExpression, inExpression, capacityRankingExpression and capacityLimitExpression are scaleOut, scaleIn, rank and limit, checked as ours. The cloud fields are set aside: the group runs on compat.red5sm2.platform.',
      tag: TAG,
      access: 'admin',
      body: NodeGroupConfig,
      responses: {
        200: { description: 'created: the group as SM2 reads it', schema: GroupView },
        400: problemResponse("VALIDATION_FAILED, with SM2's paths"),
        409: problemResponse('NODE_GROUP_EXISTS'),
        503: problemResponse('STORE_UNAVAILABLE (with Retry-After): nothing was changed'),
      },
      async handle(ctx, { body }) {
        const translated = toOurs(body, services.config.compat.red5sm2.platform);
        if (!translated.ok) throw problems.validation(translated.errors);
        const change = await services.registry.create(translated.translation.spec);
        if (!change.ok) {
          const fields = change.errors?.map((e) => ({ path: `body.${translated.translation.pathOf(e.path.replace(/^body\./, ''))}`, message: e.message }));
          if (fields) throw problems.validation(fields);
          throw new Problem(change.status, change.code, change.detail, change.retryAfter !== undefined ? { retryAfter: change.retryAfter } : {});
        }
        ctx.body = toSm2(change.group);
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/admin/nodegroup/{nodeGroupName}',
      operationId: 'sm2GetNodeGroup',
      example: { params: { nodeGroupName: 'default' } },
      summary: "SM2: one node group's config, as SM2 reads it",
      tag: TAG,
      access: 'admin',
      params: GroupParams,
      responses: { 200: { description: 'the group', schema: GroupView }, 404: problemResponse('NODE_GROUP_NOT_FOUND') },
      handle(ctx, { params }) {
        ctx.body = toSm2(groupOr404(services, params.nodeGroupName).group);
      },
    }),
    route({
      method: 'DELETE',
      path: '/as/v1/admin/nodegroup/{nodeGroupName}',
      operationId: 'sm2DeleteNodeGroup',
      example: { params: { nodeGroupName: 'sm2-group' } },
      summary: 'SM2: delete a node group: 200 at once (its installer expects it); its nodes drain and are destroyed in the background',
      tag: TAG,
      access: 'admin',
      params: GroupParams,
      responses: {
        200: { description: 'deletion started', schema: Type.Object({ name: Type.String(), status: Type.Literal('deleting') }) },
        404: problemResponse('NODE_GROUP_NOT_FOUND'),
        503: problemResponse('STORE_UNAVAILABLE (with Retry-After): nothing was changed'),
      },
      async handle(ctx, { params }) {
        const change = await services.registry.remove(params.nodeGroupName);
        if (!change.ok) throw new Problem(change.status, change.code, change.detail, change.retryAfter !== undefined ? { retryAfter: change.retryAfter } : {});
        ctx.body = { name: params.nodeGroupName, status: 'deleting' };
      },
    }),
    statusRoute('/as/v1/admin/nodegroup/status/{nodeGroupName}', 'sm2NodeGroupStatus'),
    // The HTML5 testbed's spelling of the same.
    statusRoute('/as/v1/admin/nodegroup/{nodeGroupName}/status', 'sm2NodeGroupStatusAlt'),
  ];
}
