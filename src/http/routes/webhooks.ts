// Webhook endpoints (docs/webhooks.md): list them with their delivery state, and add, replace and
// remove those of the API (the config file's are the config file's). Admin only.
import Type from 'typebox';
import { WebhookSchema } from '../../config/webhook-schema.js';
import { Name } from '../../config/node-group-schema.js';
import type { Failure } from '../../domain/failure.js';
import type { WebhookView } from '../../webhooks/webhooks.js';
import { WebhookViewSchema } from '../../schemas/api.js';
import { problems } from '../problem.js';
import { problemResponse, route, type RouteDef } from '../route.js';
import { fail, type Services } from '../services.js';

const IdParams = Type.Object({ id: Name });
const errors = {
  400: problemResponse('VALIDATION_FAILED: a bad URL (link-local or metadata addresses without allowLinkLocal), secret or filter'),
  401: problemResponse('UNAUTHORIZED'),
  403: problemResponse('FORBIDDEN'),
};
const example = { url: 'http://127.0.0.1:9000/switchyard', secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', events: ['stream.*', 'node.state'] };

export function webhookRoutes(services: Services): RouteDef[] {
  const settled = (r: WebhookView | Failure): WebhookView => {
    if ('ok' in r) fail(r);
    return r as WebhookView;
  };
  const checked = <T extends { url: string; allowLinkLocal: boolean }>(body: T) => {
    const why = services.webhooks.problem(body as never);
    if (why) throw problems.validation([{ path: `body.${why.path}`, message: why.message }]);
    return body;
  };
  return [
    route({
      method: 'GET',
      path: '/as/v1/webhooks',
      operationId: 'listWebhooks',
      example: { response: [] },
      summary: 'Webhook endpoints, with their delivery state',
      description: 'Every endpoint, from the config file and from the API: what it wants, and how its delivery stands (last success, failures, backlog).',
      tag: 'webhooks',
      access: 'admin',
      responses: { 200: { description: 'the endpoints', schema: Type.Array(WebhookViewSchema) }, ...errors },
      async handle(ctx) {
        ctx.body = services.webhooks.list();
      },
    }),
    route({
      method: 'POST',
      path: '/as/v1/webhooks',
      operationId: 'createWebhook',
      example: { body: example },
      summary: 'Add a webhook endpoint: every matching event from now on is POSTed to it, signed, in order, at least once',
      description:
        'Standard Webhooks signing (webhook-id = the event id, webhook-timestamp, webhook-signature). Failed deliveries are retried, the wait doubling from 1 s to 10 min, as long as the event log holds the event.',
      tag: 'webhooks',
      access: 'admin',
      body: WebhookSchema,
      responses: { 201: { description: 'the endpoint', schema: WebhookViewSchema }, 409: problemResponse('WEBHOOK_EXISTS or WEBHOOK_LIMIT'), ...errors },
      async handle(ctx, { body }) {
        const view = settled(await services.webhooks.create(checked(body)));
        ctx.status = 201;
        ctx.set('Location', `/as/v1/webhooks/${view.id}`);
        ctx.body = view;
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/webhooks/{id}',
      operationId: 'getWebhook',
      example: { params: { id: 'billing' } },
      summary: 'One webhook endpoint and its delivery state',
      description:
        'What it wants, where it came from, and how its delivery stands: the last event passed, what waits, the last success and the last error, and when the event that failed is tried again.',
      tag: 'webhooks',
      access: 'admin',
      params: IdParams,
      responses: { 200: { description: 'the endpoint', schema: WebhookViewSchema }, 404: problemResponse('WEBHOOK_NOT_FOUND'), ...errors },
      async handle(ctx, { params }) {
        const view = services.webhooks.get(params.id);
        if (!view) throw problems.notFound('WEBHOOK_NOT_FOUND', `no webhook '${params.id}'`);
        ctx.body = view;
      },
    }),
    route({
      method: 'PUT',
      path: '/as/v1/webhooks/{id}',
      operationId: 'replaceWebhook',
      example: { params: { id: 'billing' }, body: { ...example, id: 'billing' } },
      summary: 'Replace a webhook endpoint made through the API; its delivery goes on from where it was',
      description: "The config file's endpoints are changed in the config file (409 WEBHOOK_FROM_CONFIG). A secret of whsec_(kept) keeps the stored one.",
      tag: 'webhooks',
      access: 'admin',
      params: IdParams,
      body: WebhookSchema,
      responses: { 200: { description: 'the endpoint', schema: WebhookViewSchema }, 404: problemResponse('WEBHOOK_NOT_FOUND'), 409: problemResponse('WEBHOOK_FROM_CONFIG'), ...errors },
      async handle(ctx, { params, body }) {
        if (body.id !== undefined && body.id !== params.id) throw problems.validation([{ path: 'body.id', message: `must be the path's id ('${params.id}')` }]);
        ctx.body = settled(await services.webhooks.replace(params.id, checked(body)));
      },
    }),
    route({
      method: 'DELETE',
      path: '/as/v1/webhooks/{id}',
      operationId: 'deleteWebhook',
      example: { params: { id: 'billing' } },
      summary: 'Remove a webhook endpoint made through the API',
      description: "Its delivery stops at once; an event being sent may still arrive. The config file's endpoints are removed from the config file (409).",
      tag: 'webhooks',
      access: 'admin',
      params: IdParams,
      responses: { 204: { description: 'removed' }, 404: problemResponse('WEBHOOK_NOT_FOUND'), 409: problemResponse('WEBHOOK_FROM_CONFIG'), ...errors },
      async handle(ctx, { params }) {
        const r = await services.webhooks.remove(params.id);
        if (!r.ok) fail(r);
        ctx.status = 204;
      },
    }),
  ];
}
