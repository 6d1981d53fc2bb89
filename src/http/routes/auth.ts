// Endpoint 1 (login) and the added password change (README: API, Security).
import { createHmac, randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Jwks, LoginBody, LoginResponse, PasswordBody } from '../../schemas/api.js';
import { clientAddress } from '../client-address.js';
import { Problem, problems } from '../problem.js';
import { problemResponse, route, type RouteDef } from '../route.js';
import type { Services } from '../services.js';

const problem = problemResponse;
export const PASSWORD_ROUTE = '/as/v1/auth/password';

/**
 * How a failed login names a user name that does not exist: a tag, not the text, since a password
 * typed into the user name field lands there. The key is this process's own, so tags tell one
 * run's attempts apart without letting anyone reading the log test guesses against them.
 */
function userTagger(): (name: string) => string {
  const key = randomBytes(32);
  return (name) => createHmac('sha256', key).update(name).digest('base64url').slice(0, 12);
}

export function authRoutes(services: Services): RouteDef[] {
  const throttled = (waitMs: number) => new Problem(429, 'RATE_LIMITED', 'too many failed logins from this address; wait before trying again', { retryAfter: Math.max(1, Math.ceil(waitMs / 1000)) });
  const tag = userTagger();
  /** Refused (429) for an address or (user, address) that failed too often; held a little for a user failing everywhere. */
  const admit = async (username: string, address: string) => {
    const verdict = services.throttle.before(username, address);
    if ('refuse' in verdict) throw throttled(verdict.refuse);
    if (verdict.delay > 0) await sleep(verdict.delay);
  };

  return [
    route({
      method: 'POST',
      path: '/as/v1/auth/login',
      operationId: 'login',
      example: { body: { username: 'admin', password: 'correct-horse-battery' }, response: { accessToken: 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9…', tokenType: 'Bearer', expiresIn: 3600 } },
      summary: 'Log in: exchange a user name and password for a bearer token',
      description:
        'Failed logins are refused for a while per source address and per (user name, address) (429 with Retry-After, the wait doubling); a user name failing from many addresses only makes its logins slower (up to auth.loginThrottle.userSlowdown), so no one can lock a user out of an address that has not failed.',
      tag: 'auth',
      access: 'public',
      body: LoginBody,
      responses: {
        200: { description: 'a token', schema: LoginResponse },
        400: problem('malformed body'),
        401: problem('INVALID_CREDENTIALS'),
        429: problem('RATE_LIMITED'),
      },
      async handle(ctx, { body }) {
        const address = clientAddress(ctx, services.config.server.trustProxy);
        await admit(body.username, address);
        const user = await services.users.check(body.username, body.password);
        if (!user) {
          services.throttle.failed(body.username, address);
          const known = services.users.get(body.username) !== undefined;
          ctx.log.warn(known ? { user: body.username, address } : { unknownUser: tag(body.username), address }, 'login failed');
          throw problems.badCredentials('wrong user name or password');
        }
        services.throttle.succeeded(body.username, address);
        const ttl = services.config.auth.tokenTtl;
        ctx.body = { accessToken: services.signer.sign({ sub: user.username, role: user.role, ver: user.ver }, ttl), tokenType: 'Bearer', expiresIn: Math.floor(ttl / 1000) };
      },
    }),
    route({
      method: 'POST',
      path: PASSWORD_ROUTE,
      operationId: 'changePassword',
      example: { body: { currentPassword: 'the-generated-password', newPassword: 'a-long-new-password' } },
      summary: "Change the admin's password; every earlier token of the admin stops working",
      description:
        "The only call a token may make while the generated admin password is unchanged and the server listens beyond loopback. `app` passwords are the operator's (config hashes), not changed here.",
      tag: 'auth',
      access: 'admin',
      body: PasswordBody,
      responses: {
        204: { description: 'changed' },
        400: problem('bad body'),
        401: problem('wrong current password or bad token'),
        429: problem('RATE_LIMITED: too many failed attempts from this address, or too many password checks at once'),
        503: problem('STORE_UNAVAILABLE (with Retry-After): the disk refused the write; the password is unchanged'),
      },
      async handle(ctx, { body }) {
        const username = ctx.state.user!.sub;
        const address = clientAddress(ctx, services.config.server.trustProxy);
        await admit(username, address);
        const user = await services.users.check(username, body.currentPassword);
        if (!user) {
          services.throttle.failed(username, address);
          throw problems.badCredentials('the current password is wrong');
        }
        if (body.newPassword === body.currentPassword) {
          throw new Problem(400, 'VALIDATION_FAILED', 'body.newPassword must differ from the current password', {
            errors: [{ path: 'body.newPassword', message: 'must differ from the current password' }],
          });
        }
        await services.users.changePassword(user, body.newPassword);
        ctx.log.info({ user: username }, 'password changed');
        ctx.status = 204;
      },
    }),
    route({
      method: 'GET',
      path: '/as/v1/auth/jwks',
      operationId: 'jwks',
      example: { response: { keys: [] } },
      summary: "The public key that verifies tokens (ES256), for services that check Switchyard's tokens themselves",
      description: "Under auth.jwtAlgorithm ES256 the signing key's public half, with the kid that tokens name in their header; under HS256 an empty set.",
      tag: 'auth',
      access: 'public',
      responses: { 200: { description: 'a JSON Web Key Set', schema: Jwks, contentType: 'application/jwk-set+json' } },
      handle(ctx) {
        ctx.type = 'application/jwk-set+json';
        ctx.body = { keys: services.signer.jwk ? [services.signer.jwk] : [] };
      },
    }),
  ];
}
