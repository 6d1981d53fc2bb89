// Red5 Pro Stream Manager 2.0's API beside ours, when compat.red5sm2.enabled says so
// (SWITCHYARD_COMPAT_RED5SM2=on): SM2's paths and shapes, translated onto the same services our
// own routes use. Nothing here chooses nodes, validates a node group or stores anything itself
// (docs/migrating-from-red5-sm2.md).
import type { RouteMount } from '../../http/app.js';
import type { RouteDef } from '../../http/route.js';
import type { Services } from '../../http/services.js';
import type { Guard } from './access.js';
import { adminRoutes } from './admin-routes.js';
import { provisionRoutes } from './provision-routes.js';
import { proxyRoutes } from './proxy-routes.js';
import { QUIET_STREAM_ROUTES, streamRoutes } from './stream-routes.js';

export type { Guard } from './access.js';

/** SM2's routes, or none when the layer is off. `guard` is the app's own access guard. */
export function red5sm2Routes(services: Services, guard: Guard): RouteDef[] {
  if (!services.config.compat.red5sm2.enabled) return [];
  return [...adminRoutes(services), ...streamRoutes(services, guard), ...provisionRoutes(services), ...proxyRoutes(services, guard)];
}

export const RED5SM2_QUIET_ROUTES: readonly string[] = [...QUIET_STREAM_ROUTES, '/as/v1/admin/healthz'];

/** SM2's API as the composition root mounts it beside ours (src/root/service.ts). */
export const red5sm2Mount: RouteMount = { routes: red5sm2Routes, quiet: RED5SM2_QUIET_ROUTES };
