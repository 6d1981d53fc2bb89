// What route handlers may use. The front end holds configuration, credentials and the event
// log; node-group state is only ever reached through the actors.
import type { Logger } from 'pino';
import type { ActorHost } from '../../actors/host.js';
import type { GroupHandle } from '../../actors/group-handle.js';
import type { Config } from '../config/types.js';
import type { Failure } from '../domain/failure.js';
import type { TokenSigner } from '../auth/tokens.js';
import type { AdmissionIssuer } from '../admission/issuer.js';
import type { AdmissionWebhooks } from '../admission/webhook.js';
import type { Webhooks } from '../webhooks/webhooks.js';
import type { LoginThrottle } from '../auth/login-throttle.js';
import type { NodeTokens } from '../auth/node-tokens.js';
import type { LookupRateLimiter } from '../auth/lookup-rate.js';
import type { Users } from '../auth/users.js';
import type { PasswordHasher } from '../auth/passwords.js';
import type { Events } from '../events/log.js';
import type { Backups } from '../store/backup.js';
import type { NodeGroupRegistry } from '../nodegroups/registry.js';
import type { Locator } from '../geo/locator.js';
import type { Metrics } from '../observability/metrics.js';
import type { Ctx } from './context.js';
import type { TerraformStateBackend } from './routes/terraform-state.js';
import { Problem, problems } from './problem.js';

export interface Services {
  config: Config;
  actors: ActorHost;
  registry: NodeGroupRegistry;
  users: Users;
  hasher: PasswordHasher;
  signer: TokenSigner;
  /** Admission tokens for lookup answers, node keys and credentials, and the groups' webhooks (docs/security.md). */
  admission: { issuer: AdmissionIssuer; webhooks: AdmissionWebhooks };
  /** Event webhooks: endpoints and their deliveries (docs/webhooks.md). */
  webhooks: Webhooks;
  throttle: LoginThrottle;
  nodeTokens: NodeTokens;
  lookupRate: LookupRateLimiter;
  events: Events;
  metrics: Metrics;
  locator: Locator;
  log: Logger;
  /** Ready to serve lookups: store open, actors loaded, supervisor running, not stopping. */
  ready(): boolean;
  openapi(): unknown;
  /** Aborted when the service starts to stop: long-lived answers (SSE) end then. */
  stopping: AbortSignal;
  /** The clock that expires tokens already verified (the token cache, open node channels). */
  now(): number;
  /** Cluster mode (docs/cluster.md): this instance among the others. */
  cluster?: ClusterView;
  /** Cluster mode: the Terraform state of this instance's Terraform groups (an internal route). */
  terraformState?: TerraformStateBackend;
  /** Copies of the database taken by this process (GET /as/v1/admin/backup). */
  backups?: Backups;
}

export interface ClusterView {
  instance: string;
  /** The instance that owns the group now, if any is known. */
  owner(group: string): string | null;
  /** The live instances' URLs, this one first: node agents fail over to them. */
  urls(): string[];
  /** NATS is reachable. */
  connected(): boolean;
}

export function groupOr404(services: Services, name: string, options: { includeDeleting?: boolean } = {}): GroupHandle {
  const handle = services.actors.group(name);
  if (!handle) throw problems.notFound('NODE_GROUP_NOT_FOUND', `node group '${name}' does not exist`);
  if (handle.deleting && !options.includeDeleting) throw problems.notFound('NODE_GROUP_NOT_FOUND', `node group '${name}' is being deleted`);
  return handle;
}

/** Turns an actor's failure into the problem it names. */
export function fail(f: Failure): never {
  throw new Problem(f.status, f.code, f.detail, {
    ...(f.retryAfter !== undefined ? { retryAfter: f.retryAfter } : {}),
    // Only what the API promises: a registry's field errors carry a JSON pointer too.
    ...(f.errors ? { errors: f.errors.map(({ path, message }) => ({ path, message })) } : {}),
  });
}

export const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/**
 * The page of `items` (fetched with one more than `limit`, to know): its first `limit`, and
 * `Link: <…>; rel="next"` only when more remain (docs/api.md).
 */
export function page<T>(ctx: Ctx, items: T[], limit: number, keyOf: (item: T) => string): T[] {
  if (items.length <= limit) return items;
  const out = items.slice(0, limit);
  const params = new URLSearchParams(ctx.querystring);
  params.set('after', keyOf(out.at(-1)!));
  ctx.set('Link', `<${ctx.path}?${params.toString()}>; rel="next"`);
  return out;
}
