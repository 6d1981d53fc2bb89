// Who may call what (docs/security.md). koa-jwt verifies tokens (the one configured algorithm, HS256
// or ES256, against a KeyObject);
// a verified token is cached until it expires, so the lookup path pays for one signature check
// per token, not per request. The user's credential version is checked on every request, so a
// password change retires old tokens at once, cached or not.
import { createHash, timingSafeEqual, type KeyObject } from 'node:crypto';
import koaJwt from 'koa-jwt';
import type { Next } from 'koa';
import type { NodeTokens } from '../../auth/node-tokens.js';
import type { Claims } from '../../auth/tokens.js';
import type { JwtAlgorithm } from '../../auth/tokens.js';
import type { Users } from '../../auth/users.js';
import type { TokenRole } from '../../domain/vocabulary.js';
import type { Ctx } from '../context.js';
import { problems, type Problem } from '../problem.js';
import type { Access } from '../route.js';

export interface GuardOptions {
  /** The key that verifies: the HS256 secret or the ES256 public key. */
  key: KeyObject;
  algorithm: JwtAlgorithm;
  users: Users;
  /** Node token generations: a revoked node's tokens are refused. */
  nodeTokens?: NodeTokens;
  /** Whether the server listens on loopback only (the initial-password rule then does not bite). */
  loopbackOnly: boolean;
  metricsAuth: 'none' | 'admin';
  /** SWITCHYARD_METRICS_TOKEN: a static bearer secret a scraper (Prometheus) may send to /metrics instead of an admin token. */
  metricsToken?: string;
  /** The one route an initial-password token may call. */
  passwordRoute: string;
  now?: () => number;
  cacheSize?: number;
}

const ALLOWED: Record<Exclude<Access, 'public'>, readonly TokenRole[]> = {
  app: ['app', 'admin'],
  admin: ['admin'],
  node: ['node'],
  metrics: ['admin'],
};

const ROLES: ReadonlySet<string> = new Set(['admin', 'app', 'node']);

function wellFormed(c: unknown): c is Claims {
  const claims = c as Claims;
  return (
    typeof claims === 'object' &&
    claims !== null &&
    typeof claims.sub === 'string' &&
    ROLES.has(claims.role) &&
    typeof claims.exp === 'number' &&
    (claims.gen === undefined || (Number.isSafeInteger(claims.gen) && claims.gen >= 0)) &&
    (claims.role !== 'node' || (typeof claims.nodeGroup === 'string' && typeof claims.nodeId === 'string'))
  );
}

/** The app's access guard: for a kind of access, the middleware that lets it through or throws the problem. */
export type Guard = (access: Access) => (ctx: Ctx, next: Next) => Promise<void>;

export function createGuard(options: GuardOptions): Guard {
  const now = options.now ?? Date.now;
  const revoked = (c: Claims): boolean => {
    if (c.role === 'node') return options.nodeTokens?.revoked(c) ?? false;
    const user = options.users.get(c.sub);
    return !user || user.ver !== c.ver || user.role !== c.role;
  };
  const verifier = koaJwt({
    // koa-jwt's types predate KeyObjects; jsonwebtoken accepts them and skips re-parsing the key.
    secret: options.key as unknown as Buffer,
    // One algorithm, the configured one: no token of another is ever checked (no alg confusion).
    algorithms: [options.algorithm],
    passthrough: true,
    key: 'user',
    isRevoked: async (_ctx: unknown, payload: object) => !wellFormed(payload) || revoked(payload),
  });
  const cache = new Map<string, Claims>();
  const max = options.cacheSize ?? 10_000;

  const explain = (err: Error | undefined): Problem => {
    if (err?.name === 'TokenExpiredError') return problems.badToken('the token has expired; log in again', 'TOKEN_EXPIRED');
    if (err?.name === 'NotBeforeError') return problems.badToken('the token is not valid yet');
    if (err?.message === 'Token revoked') return problems.badToken("the token is no longer valid (its user or password changed, or its node's tokens were revoked); log in again");
    return problems.badToken('the token is not valid');
  };

  async function verify(ctx: Ctx): Promise<Claims> {
    const header = ctx.get('authorization');
    if (!header) throw problems.noToken();
    const match = /^Bearer +([A-Za-z0-9._~+/=-]{1,4096})\s*$/i.exec(header);
    if (!match) throw problems.badToken('the Authorization header must be "Bearer <token>"');
    const token = match[1]!;
    const hit = cache.get(token);
    if (hit) {
      if (hit.exp * 1000 <= now()) {
        cache.delete(token);
        throw problems.badToken('the token has expired; log in again', 'TOKEN_EXPIRED');
      }
      if (revoked(hit)) throw explain(new Error('Token revoked'));
      return hit;
    }
    ctx.state.user = undefined;
    ctx.state.jwtOriginalError = undefined;
    await verifier(ctx as never, async () => {});
    const claims = ctx.state.user;
    if (!claims) throw explain(ctx.state.jwtOriginalError);
    if (cache.size >= max) cache.delete(cache.keys().next().value!);
    cache.set(token, claims);
    return claims;
  }

  return (access) => {
    if (access === 'public' || (access === 'metrics' && options.metricsAuth === 'none')) {
      return async (_ctx, next) => next();
    }
    const allowed = ALLOWED[access];
    const scraper = access === 'metrics' && options.metricsToken ? digest(options.metricsToken) : null;
    return async function guard(ctx: Ctx, next: Next): Promise<void> {
      if (scraper) {
        // Compared as digests, in constant time: the scraper's secret is not a JWT.
        const m = /^Bearer +(\S{1,4096})\s*$/i.exec(ctx.get('authorization'));
        if (m && timingSafeEqual(digest(m[1]!), scraper)) return next();
      }
      const claims = await verify(ctx);
      ctx.state.user = claims;
      if (!allowed.includes(claims.role)) {
        throw problems.forbidden(`a token of role '${claims.role}' cannot call ${ctx.method} ${ctx.state.route ?? ctx.path}`);
      }
      // Node tokens are the service's own (its agents' heartbeats), not a user's: they go on.
      if (claims.role !== 'node' && !options.loopbackOnly && ctx.state.route !== options.passwordRoute && options.users.initialPending()) {
        throw problems.forbidden('the initial password must be changed first (POST /as/v1/auth/password)', 'PASSWORD_CHANGE_REQUIRED');
      }
      await next();
    };
  };
}

const digest = (text: string) => createHash('sha256').update(text).digest();
