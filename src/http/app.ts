// The front end: a small Koa core that composes small middleware (after Koa's own design):
//   request frame (id, log line, security headers, errors as problem+json) → router
// and, per route: name → access guard (koa-jwt) → validated input → handler → group actor.
import Koa from 'koa';
import Router from '@koa/router';
import type { AppContextExtras, AppState } from './context.js';
import { createGuard, type Guard } from './middleware/auth.js';
import { installRequestLogger, requestFrame } from './middleware/request-context.js';
import { securityHeaders } from './middleware/security-headers.js';
import { mount, type RouteDef } from './route.js';
import { authRoutes, PASSWORD_ROUTE } from './routes/auth.js';
import { lookupRoutes } from './routes/lookups.js';
import { proxyRoutes } from './proxy/routes.js';
import { nodeGroupRoutes } from './routes/nodegroups.js';
import { nodeRoutes } from './routes/nodes.js';
import { provisionRoutes } from './routes/provisions.js';
import { streamRoutes } from './routes/streams.js';
import { webhookRoutes } from './routes/webhooks.js';
import { systemRoutes } from './routes/system.js';
import { backupRoutes } from './routes/backup.js';
import { mountTerraformState } from './routes/terraform-state.js';
import { staticPages } from './static-pages.js';
import { isLoopbackHost } from '../domain/hosts.js';
import type { Services } from './services.js';

/** High-volume routes whose access lines are logged at debug, not info (metrics count them). */
const QUIET = new Set([
  '/as/v1/nodes/{nodeId}/events',
  '/as/v1/streams/live/{streamName}/publish',
  '/as/v1/streams/live/{streamName}/subscribe',
  '/as/v1/streams/stream/{nodeGroup}/{streamName}',
  '/as/v1/healthz',
  '/as/v1/readyz',
  '/as/v1/metrics',
]);

/**
 * Routes of another API mounted beside ours by the composition root (src/root/service.ts): Red5 SM2's
 * (src/compat). They are given the app's own access guard; their high-volume paths are logged
 * at debug like ours.
 */
export interface RouteMount {
  routes(services: Services, guard: Guard): RouteDef[];
  quiet: readonly string[];
}

/** One access guard per service, so that every route (compat routes' own checks too) shares its token cache. */
const guards = new WeakMap<Services, Guard>();
function guardOf(services: Services): Guard {
  let guard = guards.get(services);
  if (!guard) {
    guard = createGuard({
      key: services.signer.verifyKey,
      algorithm: services.signer.algorithm,
      users: services.users,
      nodeTokens: services.nodeTokens,
      loopbackOnly: isLoopbackHost(services.config.server.host),
      metricsAuth: services.config.server.metricsAuth,
      ...(services.config.server.metricsToken ? { metricsToken: services.config.server.metricsToken } : {}),
      passwordRoute: PASSWORD_ROUTE,
      now: services.now,
    });
    guards.set(services, guard);
  }
  return guard;
}

/** Our routes, then the mounts'. */
export function allRoutes(services: Services, mounts: readonly RouteMount[] = []): RouteDef[] {
  return [
    ...authRoutes(services),
    ...lookupRoutes(services),
    // The WebRTC signalling proxy (docs/webrtc.md); SM2's shapes take its POST paths when compat.red5sm2 is on.
    ...proxyRoutes(services, { offers: !services.config.compat.red5sm2.enabled }),
    ...provisionRoutes(services),
    ...streamRoutes(services),
    ...nodeGroupRoutes(services),
    ...nodeRoutes(services),
    ...systemRoutes(services),
    ...backupRoutes(services),
    ...webhookRoutes(services),
    ...mounts.flatMap((m) => m.routes(services, (access) => guardOf(services)(access))),
  ];
}

export function createApp(services: Services, routes: readonly RouteDef[], mounts: readonly RouteMount[] = []): Koa<AppState, AppContextExtras> {
  const app = new Koa<AppState, AppContextExtras>({ proxy: false });
  // Errors are answered and logged by errorHandler; Koa's own printing would duplicate them.
  app.silent = true;
  const router = new Router<AppState, AppContextExtras>();
  mount(router, routes, { bodyLimit: services.config.server.bodyLimit, guard: guardOf(services) });
  // Internal, and so apart from `routes` (which the OpenAPI document lists): cluster mode only.
  mountTerraformState(router, services);
  const observe = (route: string, method: string, status: number) => services.metrics.request({ method, route, status: String(status) }).inc();
  installRequestLogger(app, services.log);
  app.use(requestFrame(services.log, observe, securityHeaders(services.config.server.tls !== undefined), new Set([...QUIET, ...mounts.flatMap((m) => m.quiet)]), services.stopping));
  app.use(router.routes());
  app.use(router.allowedMethods());
  // The dashboard and the docs page: only what no API route took gets here.
  app.use(staticPages({ log: services.log }));
  return app;
}
