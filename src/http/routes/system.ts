// Liveness, readiness, Prometheus metrics, the OpenAPI document and the event stream (docs/api.md).
import { PassThrough } from 'node:stream';
import Type from 'typebox';
import type { EventRecord } from '../../domain/events.js';
import { follow } from '../../events/resume.js';
import { Problem, problems } from '../problem.js';
import { problemResponse, route, type RouteDef } from '../route.js';
import type { Services } from '../services.js';

const EventsQuery = Type.Object(
  {
    since: Type.Optional(Type.Integer({ minimum: 0, description: 'replay events after this number (as Last-Event-ID does)' })),
    types: Type.Optional(Type.String({ pattern: '^[a-z.]{1,40}(,[a-z.]{1,40}){0,20}$', description: 'comma-separated type prefixes, e.g. node.,stream.moved' })),
  },
  { additionalProperties: false },
);

/** Event streams open at once: each holds a socket, a subscription and its unread events. */
export const MAX_EVENT_STREAMS = 64;
/** Events a stream's client has left unread past this: it is not reading, and is let go. */
const MAX_UNREAD_BYTES = 1 << 20;

export function systemRoutes(services: Services): RouteDef[] {
  let open = 0;
  services.metrics.trackEventStreams(() => open);
  services.metrics.trackEventLog(() => services.events.waiting);
  return [
    route({
      method: 'GET',
      path: '/as/v1/healthz',
      operationId: 'healthz',
      example: { response: { status: 'ok' } },
      summary: 'Liveness: the process is up and its event loop turns',
      description: 'For liveness probes: 200 whenever the process can answer at all. It checks nothing else; readyz does.',
      tag: 'system',
      access: 'public',
      responses: { 200: { description: 'alive', schema: Type.Object({ status: Type.Literal('ok') }) } },
      handle(ctx) {
        ctx.body = { status: 'ok' };
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/readyz',
      operationId: 'readyz',
      example: { response: { status: 'ready', groups: { default: true } } },
      summary: 'Readiness: the store is open, every node-group actor is loaded and the supervisor runs',
      description: "For readiness probes and load balancers: 503 NOT_READY while the service starts or stops, or while a node group's actor is (re)starting; groups says which.",
      tag: 'system',
      access: 'public',
      responses: {
        200: {
          description: 'ready',
          schema: Type.Object({
            status: Type.Literal('ready'),
            groups: Type.Record(Type.String(), Type.Boolean()),
            instance: Type.Optional(Type.String({ description: 'cluster mode: this instance' })),
            owners: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()]), { description: 'cluster mode: the instance that owns each node group' })),
          }),
        },
        503: problemResponse('NOT_READY'),
      },
      handle(ctx) {
        const groups = Object.fromEntries([...services.actors.groups.values()].map((g) => [g.name, g.ready]));
        const c = services.cluster;
        const owners = c ? Object.fromEntries([...services.actors.groups.keys()].map((name) => [name, c.owner(name)])) : undefined;
        if (!services.ready()) {
          const why = c && !c.connected() ? 'NATS is not reachable; ' : '';
          throw problems.notReady(`not ready: ${why}${JSON.stringify(owners ?? groups)}`);
        }
        ctx.body = { status: 'ready', groups, ...(c ? { instance: c.instance, owners } : {}) };
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/metrics',
      operationId: 'metrics',
      summary: 'Prometheus metrics: open on a loopback bind, an admin token elsewhere (server.metricsAuth), or the scraper secret SWITCHYARD_METRICS_TOKEN',
      description:
        'The text exposition format: lookup latency by endpoint and result, HTTP requests by route and status, nodes by group, role, region and state, the load, limit, connections and last heartbeat of each node (the busiest metrics.nodeSeries per group), actor call latency and heap, node channels, event streams, events by type, and the process.',
      example: {
        response:
          '# HELP switchyard_nodes Nodes by node group, role, region and state\n# TYPE switchyard_nodes gauge\nswitchyard_nodes{group="default",role="edge",region="us-east",state="INSERVICE"} 1\n',
      },
      tag: 'system',
      access: 'metrics',
      responses: { 200: { description: 'text exposition format', schema: Type.String(), contentType: 'text/plain; version=0.0.4' } },
      async handle(ctx) {
        ctx.type = services.metrics.registry.contentType;
        ctx.body = await services.metrics.registry.metrics();
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/openapi.json',
      operationId: 'openapi',
      summary: 'This document',
      description: 'OpenAPI 3.1, generated from the route definitions the server enforces, so it cannot drift from them; rendered for people at /as/v1/docs.',
      example: { response: { openapi: '3.1.0', info: { title: 'Switchyard', version: '0.1.0' }, paths: {} } },
      tag: 'system',
      access: 'public',
      responses: { 200: { description: 'OpenAPI 3.1', schema: Type.Object({}, { additionalProperties: true }) } },
      handle(ctx) {
        ctx.body = services.openapi();
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/events',
      operationId: 'events',
      example: { query: { since: '0', types: 'node.,scaling.' } },
      summary: 'Server-Sent Events: node states, stream binds and moves, scaling decisions, platform errors',
      description:
        'An event is sent once it is in the log (durable), with its number as its id; reconnect with Last-Event-ID (or ?since=) to replay what was missed from the bounded log (everything it still holds after that id, then the live events, with no gap and no duplicate). Ids only grow and never repeat, across crashes too. An event the log could not take (the disk guard refusing writes) is sent without an id: it cannot be replayed.',
      tag: 'system',
      access: 'admin',
      query: EventsQuery,
      responses: {
        200: { description: 'an event stream', schema: Type.String(), contentType: 'text/event-stream' },
        401: problemResponse('UNAUTHORIZED'),
        403: problemResponse('FORBIDDEN'),
        429: problemResponse('RATE_LIMITED (with Retry-After): 64 event streams are open'),
      },
      handle(ctx, { query }) {
        if (open >= MAX_EVENT_STREAMS) throw new Problem(429, 'RATE_LIMITED', `${MAX_EVENT_STREAMS} event streams are open; close one, or retry later`, { retryAfter: 5 });
        const lastId = Number(ctx.get('last-event-id'));
        const since = query.since ?? (Number.isSafeInteger(lastId) && lastId >= 0 && ctx.get('last-event-id') !== '' ? lastId : undefined);
        const prefixes = query.types?.split(',');
        const wanted = (e: EventRecord) => !prefixes || prefixes.some((p) => e.type.startsWith(p));
        const stream = new PassThrough();
        let ended = false;
        let unsubscribe = () => {};
        let keepAlive: NodeJS.Timeout | undefined;
        let gone!: () => void;
        const goneAt = new Promise<false>((r) => (gone = () => r(false)));
        const end = (): void => {
          if (ended) return;
          ended = true;
          open--;
          unsubscribe();
          clearInterval(keepAlive);
          services.stopping.removeEventListener('abort', end);
          ctx.req.socket.off('end', end).off('close', end);
          stream.end();
          gone();
        };
        const send = (e: EventRecord) => {
          if (ended || !wanted(e)) return;
          // No id for an event the log could not take: the client's Last-Event-ID stays at the last logged one.
          stream.write(`${e.seq === undefined ? '' : `id: ${e.seq}\n`}event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
          // A client that does not read is let go rather than buffered for: it reconnects with
          // Last-Event-ID and the log replays what it missed.
          if (stream.writableLength > MAX_UNREAD_BYTES) end();
        };
        open++;
        ctx.req.socket.setNoDelay(true);
        ctx.status = 200;
        ctx.type = 'text/event-stream';
        ctx.set('X-Accel-Buffering', 'no');
        ctx.body = stream;
        stream.write(`: switchyard events, last id ${services.events.last}\n\n`);
        // A replay goes page by page, each once the client has read the last: everything the log
        // holds after `since`, then the live events (src/events/resume.ts).
        const room = () => (ended ? goneAt : stream.writableNeedDrain ? Promise.race([new Promise<true>((r) => stream.once('drain', () => r(true))), goneAt]) : Promise.resolve(true));
        unsubscribe = follow(services.events, since, { send, room, overflow: end });
        keepAlive = setInterval(() => stream.write(': keep-alive\n\n'), 15_000);
        // The response's close, and the socket's end: a request that came as an upgrade (any
        // Upgrade header) has left Node's HTTP parser, which would otherwise notice the client go,
        // and its subscription would outlive the client until a write failed.
        ctx.res.once('close', end);
        ctx.req.socket.once('end', end);
        ctx.req.socket.once('close', end);
        stream.once('close', end);
        services.stopping.addEventListener('abort', end, { once: true });
      },
    }),
  ];
}
