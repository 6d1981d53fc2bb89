// The node agents' heartbeat (docs/nodes.md), as one POST per event or over a node channel (a
// WebSocket, node-channel.ts). A node token may only post its own node's events; the reply
// carries the node's orders (parent, drain, transcode jobs) and, past half its life, a fresh token.
import Type from 'typebox';
import type { Claims } from '../../auth/tokens.js';
import { withAdmission } from '../../admission/orders.js';
import { NodeIdParam } from '../../schemas/api.js';
import { HeartbeatReplySchema, HeartbeatSchema, type Heartbeat } from '../../schemas/heartbeat.js';
import { compile } from '../../schemas/validate.js';
import { NodeChannels, type HeartbeatAnswer } from '../node-channel.js';
import { problems } from '../problem.js';
import { problemResponse, route, type RouteDef } from '../route.js';
import { upgradeOf } from '../server.js';
import type { Services } from '../services.js';
import { EXAMPLE_ORIGIN, exampleHeartbeat } from '../examples.js';

const EVENTS_PATH = '/as/v1/nodes/{nodeId}/events';

export function nodeRoutes(services: Services): RouteDef[] {
  const ownNode = (claims: Claims, nodeId: string) => {
    if (claims.nodeId !== nodeId) throw problems.forbidden(`this token belongs to node '${claims.nodeId}', not '${nodeId}'`);
  };
  const notFound = (claims: Claims) => problems.notFound('NODE_NOT_FOUND', `node '${claims.nodeId}' is not in node group '${claims.nodeGroup}'`);

  async function beat(claims: Claims, body: Heartbeat): Promise<HeartbeatAnswer> {
    // A channel's claims were checked when it opened: a revocation since must stop it too.
    if (services.nodeTokens.revoked(claims)) throw problems.badToken("this node's tokens were revoked");
    const handle = services.actors.group(claims.nodeGroup!);
    if (!handle) throw notFound(claims);
    const answered = await handle.heartbeat(claims.nodeId!, body);
    if (!answered) throw notFound(claims);
    let reply = withAdmission(answered, services.admission.issuer, handle.name, handle.group.admission, claims.nodeId!);
    const ttl = services.config.auth.nodeTokenTtl;
    const now = services.now();
    // Cluster mode: where the agent may go when this instance does.
    if (services.cluster) reply = { ...reply, controlPlanes: services.cluster.urls() };
    if (claims.exp * 1000 - now >= ttl / 2) return { reply };
    // As jsonwebtoken counts it: whole seconds from now.
    const exp = Math.floor(now / 1000) + Math.max(1, Math.floor(ttl / 1000));
    return { reply: { ...reply, token: services.signer.nodeToken(claims.nodeGroup!, claims.nodeId!, ttl, services.nodeTokens.generation(claims.nodeGroup!, claims.nodeId!)) }, exp };
  }

  const channels = new NodeChannels({
    beat,
    event: compile<Heartbeat>(HeartbeatSchema),
    maxPayload: services.config.server.bodyLimit,
    // A channel that quiet has a frozen peer, whose node went FAULT long before; a group that
    // heartbeats more slowly than the setting still keeps its channels between heartbeats.
    idleMs: (claims) => Math.max(services.config.server.channelIdleTimeout, 3 * (services.actors.group(claims.nodeGroup!)?.group.timing.heartbeatMs ?? 0)),
    stopping: services.stopping,
    closeGraceMs: Math.min(2000, services.config.server.shutdownTimeout),
    log: services.log,
    now: services.now,
    observe: (result) => services.metrics.channelMessage({ result }).inc(),
  });
  services.metrics.trackChannels(
    () => channels.size,
    () => channels.backlogHighWater,
  );
  services.nodeTokens.onRevoke((group, nodeId) => channels.close(group, nodeId, 'REVOKED'));

  const nodeParams = Type.Object({ nodeId: NodeIdParam });
  const refusals = {
    401: problemResponse('UNAUTHORIZED'),
    403: problemResponse("FORBIDDEN: another node's token"),
    404: problemResponse('NODE_NOT_FOUND: the control plane does not know this node (the agent should stop)'),
    503: problemResponse("NOT_READY (with Retry-After): the group's actor is restarting, or the service is stopping"),
  };
  return [
    route({
      method: 'POST',
      path: EVENTS_PATH,
      operationId: 'postNodeEvent',
      example: { params: { nodeId: EXAMPLE_ORIGIN }, body: exampleHeartbeat, response: { heartbeatMs: 2000, parent: null, drain: false } },
      summary: "A node agent's heartbeat: readiness, address, listeners, metrics and streams",
      description:
        "Only the node's own token may post. The reply carries the node's orders: its parent, whether to drain, and for transcoders what to transcode; past half its life, a fresh token. Agents send the same event over a node channel (this path upgraded to a WebSocket) when the server offers one.",
      tag: 'nodes',
      access: 'node',
      params: nodeParams,
      body: HeartbeatSchema,
      responses: {
        200: { description: "the node's orders", schema: HeartbeatReplySchema },
        400: problemResponse('VALIDATION_FAILED'),
        ...refusals,
      },
      async handle(ctx, { params, body }) {
        const claims = ctx.state.user!;
        ownNode(claims, params.nodeId);
        ctx.body = (await beat(claims, body)).reply;
      },
    }),
    route({
      method: 'GET',
      path: EVENTS_PATH,
      operationId: 'openNodeChannel',
      example: { params: { nodeId: EXAMPLE_ORIGIN } },
      summary: "A node agent's heartbeats over one WebSocket",
      description:
        'With `Upgrade: websocket`, the connection becomes a node channel: each text message is one event (the body of `postNodeEvent`), ' +
        "each answer one message, in order: the node's orders (`HeartbeatReply`), or a problem (with `status` and `code`) when that event was refused. " +
        'A token renewed in an answer renews the channel too. The channel closes with 1008 and the problem code as reason when the token expires or the node is unknown, ' +
        'with 1001 when the service stops, with 1000 `IDLE` after five minutes without a message, and with 1009 for a message over the body limit.',
      tag: 'nodes',
      access: 'node',
      params: nodeParams,
      responses: {
        101: { description: 'Switching Protocols: the node channel is open' },
        400: problemResponse('VALIDATION_FAILED or BAD_REQUEST: a bad node id or WebSocket handshake'),
        ...refusals,
        426: problemResponse('UPGRADE_REQUIRED: not a WebSocket request'),
      },
      handle(ctx, { params }) {
        const claims = ctx.state.user!;
        ownNode(claims, params.nodeId);
        if (!services.actors.group(claims.nodeGroup!)) throw notFound(claims);
        channels.accept(ctx.req, upgradeOf(ctx.req), claims, ctx.requestId);
        ctx.status = 101;
        ctx.respond = false;
      },
    }),
  ];
}
