// The node agents' heartbeat (CONTRACT §6). A node token may only post its own node's events;
// the reply carries the node's orders (parent, drain, transcode jobs) and, past half its life, a
// fresh token.
import Type from 'typebox';
import { NodeEventBody, NodeEventReply, NodeIdParam } from '../../schemas/api.js';
import { problems } from '../problem.js';
import { problemResponse, route, type RouteDef } from '../route.js';
import type { Services } from '../services.js';

export function nodeRoutes(s: Services): RouteDef[] {
  return [
    route({
      method: 'POST',
      path: '/as/v1/nodes/{nodeId}/events',
      operationId: 'postNodeEvent',
      summary: "A node agent's heartbeat: readiness, address, listeners, metrics and streams",
      tag: 'nodes',
      access: 'node',
      params: Type.Object({ nodeId: NodeIdParam }),
      body: NodeEventBody,
      responses: {
        200: { description: "the node's orders", schema: NodeEventReply },
        400: problemResponse('VALIDATION_FAILED'),
        401: problemResponse('UNAUTHORIZED'),
        403: problemResponse("FORBIDDEN: another node's token"),
        404: problemResponse('NODE_NOT_FOUND: the control plane does not know this node (the agent should stop)'),
      },
      async handle(ctx, { params, body }) {
        const claims = ctx.state.user!;
        if (claims.nodeId !== params.nodeId) throw problems.forbidden(`this token belongs to node '${claims.nodeId}', not '${params.nodeId}'`);
        const handle = s.actors.group(claims.nodeGroup!);
        const notFound = () => problems.notFound('NODE_NOT_FOUND', `node '${params.nodeId}' is not in node group '${claims.nodeGroup}'`);
        if (!handle) throw notFound();
        const reply = await handle.heartbeat(params.nodeId, body);
        if (!reply) throw notFound();
        const ttl = s.config.auth.nodeTokenTtl;
        const token = claims.exp * 1000 - Date.now() < ttl / 2 ? s.signer.nodeToken(claims.nodeGroup!, params.nodeId, ttl) : undefined;
        ctx.body = token ? { ...reply, token } : reply;
      },
    }),
  ];
}
