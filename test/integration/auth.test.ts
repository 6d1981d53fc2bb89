// docs/security.md over real HTTP.
import { createPublicKey, createSecretKey, generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import jwt from 'jsonwebtoken';
import { hash } from '../../src/auth/scrypt-task.js';
import { isProblem } from '../helpers/assert.js';
import { body, request } from '../helpers/http.js';
import { ADMIN_PASSWORD, JWT_SECRET, staticGroup, startTestService, tempDir } from '../helpers/service.js';
import { type ConfigError, parseConfig } from '../../src/config/load.js';

const login = (url: string, username: string, password: string) => request(url, 'POST', '/as/v1/auth/login', { username, password });
const tokenOf = (r: { json: unknown }) => (r.json as { accessToken: string }).accessToken;

test('failed logins are refused per (user, address) and per address, with Retry-After', async (t) => {
  const svc = await startTestService({ config: { auth: { loginThrottle: { maxFailures: 3, maxAddressFailures: 5, baseDelay: '30s' } } } });
  t.teardown(() => svc.close());
  for (let i = 0; i < 3; i++) isProblem(t, await login(svc.url, 'admin', 'wrong-password'), 401, 'INVALID_CREDENTIALS');
  const blocked = await login(svc.url, 'admin', ADMIN_PASSWORD);
  isProblem(t, blocked, 429, 'RATE_LIMITED');
  t.true(Number(blocked.headers.get('retry-after')) >= 29);
  // Another user from that address has an allowance of its own, until the address as a whole has failed too often.
  isProblem(t, await login(svc.url, 'someone-else', 'x'), 401, 'INVALID_CREDENTIALS');
  isProblem(t, await login(svc.url, 'someone-else', 'x'), 401, 'INVALID_CREDENTIALS');
  isProblem(t, await login(svc.url, 'a-third', 'x'), 429, 'RATE_LIMITED');
});

test('a storm of password checks past the scrypt queue gets 429 with Retry-After, not 500 (piscina 5 words a full queue differently); a wrong current password is challenged', async (t) => {
  // The password from the environment: hashed at the service's own cost, so that a check takes
  // long enough for the storm to find the queue full (the tests' stored hash is checked in ~2 ms).
  const svc = await startTestService({ passwordPool: { threads: 1, maxQueue: 1 }, env: { SWITCHYARD_ADMIN_PASSWORD: ADMIN_PASSWORD } });
  t.teardown(() => svc.close());
  const wrong = await svc.send('POST', '/as/v1/auth/password', { currentPassword: 'not-the-password', newPassword: 'another-password-1' });
  isProblem(t, wrong, 401, 'INVALID_CREDENTIALS');
  t.regex(wrong.headers.get('www-authenticate') ?? '', /^Bearer realm="switchyard"/);
  // Ten at once: one runs, one waits, the rest find the queue full.
  const storm = await Promise.all(Array.from({ length: 10 }, () => svc.send('POST', '/as/v1/auth/password', { currentPassword: 'not-the-password', newPassword: 'another-password-1' })));
  const statuses = storm.map((r) => r.status);
  t.true(statuses.includes(429), statuses.join(','));
  t.true(
    statuses.every((s) => s === 401 || s === 429),
    statuses.join(','),
  );
  for (const r of storm.filter((x) => x.status === 429)) {
    isProblem(t, r, 429, 'RATE_LIMITED');
    t.is(r.headers.get('retry-after'), '1');
  }
});

test('a brute force spread over many addresses cannot lock the admin out of an address that has not failed; X-Forwarded-For counts only when trusted', async (t) => {
  const from = (ip: string) => ({ 'x-forwarded-for': ip });
  const trusted = await startTestService({ config: { server: { host: '127.0.0.1', port: 0, trustProxy: true }, auth: { loginThrottle: { maxFailures: 3, baseDelay: '30s', userSlowdown: '50ms' } } } });
  t.teardown(() => trusted.close());
  // Guesses from twelve addresses, three each: every one of those addresses is refused for the admin...
  for (let a = 0; a < 12; a++) {
    for (let i = 0; i < 3; i++) isProblem(t, await request(trusted.url, 'POST', '/as/v1/auth/login', { username: 'admin', password: 'guess' }, from(`203.0.113.${a + 1}`)), 401, 'INVALID_CREDENTIALS');
    isProblem(t, await request(trusted.url, 'POST', '/as/v1/auth/login', { username: 'admin', password: ADMIN_PASSWORD }, from(`203.0.113.${a + 1}`)), 429, 'RATE_LIMITED');
  }
  // ...but the admin at an address of their own logs in (slowed, not refused).
  t.is((await request(trusted.url, 'POST', '/as/v1/auth/login', { username: 'admin', password: ADMIN_PASSWORD }, from('198.51.100.7'))).status, 200);

  // Untrusted (the default): a forged X-Forwarded-For does not give an attacker fresh addresses.
  const plain = await startTestService({ config: { auth: { loginThrottle: { maxFailures: 3, baseDelay: '30s' } } } });
  t.teardown(() => plain.close());
  for (let i = 0; i < 3; i++) isProblem(t, await request(plain.url, 'POST', '/as/v1/auth/login', { username: 'admin', password: 'guess' }, from(`198.51.100.${i + 1}`)), 401, 'INVALID_CREDENTIALS');
  isProblem(t, await request(plain.url, 'POST', '/as/v1/auth/login', { username: 'admin', password: ADMIN_PASSWORD }, from('198.51.100.50')), 429, 'RATE_LIMITED');
});

test('a password change retires every earlier token; the old password stops working', async (t) => {
  const svc = await startTestService();
  t.teardown(() => svc.close());
  const old = tokenOf(await login(svc.url, 'admin', ADMIN_PASSWORD));
  isProblem(t, await svc.send('POST', '/as/v1/auth/password', { currentPassword: 'not-it-at-all', newPassword: 'a-brand-new-password' }, old), 401, 'INVALID_CREDENTIALS');
  isProblem(t, await svc.send('POST', '/as/v1/auth/password', { currentPassword: ADMIN_PASSWORD, newPassword: 'short' }, old), 400, 'VALIDATION_FAILED');
  isProblem(t, await svc.send('POST', '/as/v1/auth/password', { currentPassword: ADMIN_PASSWORD, newPassword: ADMIN_PASSWORD }, old), 400, 'VALIDATION_FAILED');
  t.is((await svc.get('/as/v1/nodegroups', old)).status, 200, 'the token works (and is cached) before the change');
  t.is((await svc.send('POST', '/as/v1/auth/password', { currentPassword: ADMIN_PASSWORD, newPassword: 'a-brand-new-password' }, old)).status, 204);
  const refused = isProblem(t, await svc.get('/as/v1/nodegroups', old), 401, 'UNAUTHORIZED');
  t.regex(refused.detail, /log in again/);
  isProblem(t, await login(svc.url, 'admin', ADMIN_PASSWORD), 401, 'INVALID_CREDENTIALS');
  const fresh = tokenOf(await login(svc.url, 'admin', 'a-brand-new-password'));
  t.is((await svc.get('/as/v1/nodegroups', fresh)).status, 200);
});

test('app users may look streams up and nothing else', async (t) => {
  const svc = await startTestService({ config: { auth: { users: [{ username: 'backend', role: 'app', passwordHash: hash('app-secret-password') }] } } });
  t.teardown(() => svc.close());
  const app = tokenOf(await login(svc.url, 'backend', 'app-secret-password'));
  isProblem(t, await svc.get('/as/v1/streams/live/cam/publish', app), 503, 'NO_CAPACITY');
  t.is((await svc.get('/as/v1/streams', app)).status, 200);
  isProblem(t, await svc.get('/as/v1/nodegroups', app), 403, 'FORBIDDEN');
  isProblem(t, await svc.send('POST', '/as/v1/provision/g', { streamName: 'x', region: 'r1', streams: [] }, app), 403, 'FORBIDDEN');
  isProblem(t, await svc.get('/as/v1/events', app), 403, 'FORBIDDEN');
  // Its password is the operator's (a config hash): one backend cannot lock the others out.
  isProblem(t, await svc.send('POST', '/as/v1/auth/password', { currentPassword: 'app-secret-password', newPassword: 'mine-now-and-only-mine' }, app), 403, 'FORBIDDEN');
  t.is((await login(svc.url, 'backend', 'app-secret-password')).status, 200);
});

test('forged, expired, early, tampered and foreign tokens are refused', async (t) => {
  const svc = await startTestService();
  t.teardown(() => svc.close());
  const key = createSecretKey(Buffer.from(JWT_SECRET));
  const claims = { sub: 'admin', role: 'admin', ver: 1 };
  const expired = jwt.sign({ ...claims, exp: Math.floor(Date.now() / 1000) - 10 }, key, { algorithm: 'HS256' });
  isProblem(t, await svc.get('/as/v1/nodegroups', expired), 401, 'TOKEN_EXPIRED');
  const early = jwt.sign(claims, key, { algorithm: 'HS256', notBefore: 3600, expiresIn: 7200 });
  isProblem(t, await svc.get('/as/v1/nodegroups', early), 401, 'UNAUTHORIZED');
  const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const none = `${enc({ alg: 'none', typ: 'JWT' })}.${enc({ ...claims, exp: Math.floor(Date.now() / 1000) + 600 })}.`;
  isProblem(t, await svc.get('/as/v1/nodegroups', none), 401, 'UNAUTHORIZED');
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  isProblem(t, await svc.get('/as/v1/nodegroups', jwt.sign(claims, privateKey, { algorithm: 'RS256', expiresIn: 600 })), 401, 'UNAUTHORIZED');
  // HS256 signed with the public key's PEM as the secret: the algorithm-confusion attack.
  const pem = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'pem' });
  isProblem(t, await svc.get('/as/v1/nodegroups', jwt.sign(claims, pem, { algorithm: 'HS256', expiresIn: 600 })), 401, 'UNAUTHORIZED');
  isProblem(t, await svc.get('/as/v1/nodegroups', jwt.sign(claims, createSecretKey(Buffer.alloc(32, 1)), { algorithm: 'HS256', expiresIn: 600 })), 401, 'UNAUTHORIZED');
  const good = svc.adminToken;
  const [h, p, sig] = good.split('.') as [string, string, string];
  const tampered = `${h}.${enc({ ...JSON.parse(Buffer.from(p, 'base64url').toString()), role: 'admin', sub: 'root' })}.${sig}`;
  isProblem(t, await svc.get('/as/v1/nodegroups', tampered), 401, 'UNAUTHORIZED');
  // A well-signed token for a user that does not exist (or an old credential version).
  isProblem(t, await svc.get('/as/v1/nodegroups', jwt.sign({ sub: 'ghost', role: 'admin', ver: 1 }, key, { algorithm: 'HS256', expiresIn: 600 })), 401, 'UNAUTHORIZED');
  isProblem(t, await svc.get('/as/v1/nodegroups', jwt.sign({ ...claims, ver: 0 }, key, { algorithm: 'HS256', expiresIn: 600 })), 401, 'UNAUTHORIZED');
  t.is((await svc.get('/as/v1/nodegroups', good)).status, 200);
});

test('ES256: tokens are signed with a key pair whose public half is published as a JWKS; HS256 tokens and the public key as an HMAC secret are refused', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  let svc = await startTestService({ dataDir, config: { auth: { jwtAlgorithm: 'ES256' } } });
  const jwks = await svc.get('/as/v1/auth/jwks', null);
  t.is(jwks.status, 200);
  t.regex(jwks.headers.get('content-type') ?? '', /^application\/jwk-set\+json/);
  const [jwk] = body<{ keys: Array<import('node:crypto').JsonWebKey & { kid: string }> }>(jwks).keys;
  const token = svc.adminToken;
  const header = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as { alg: string; kid: string };
  t.deepEqual(header, { alg: 'ES256', typ: 'JWT', kid: jwk!.kid });
  // Anyone holding the published key can check a token, as another service would.
  const publicKey = createPublicKey({ key: jwk!, format: 'jwk' });
  t.like(jwt.verify(token, publicKey, { algorithms: ['ES256'] }), { sub: 'admin', role: 'admin' });
  t.is((await svc.get('/as/v1/nodegroups', token)).status, 200);
  // Node tokens (signed by the supervisor's thread for local nodes, here by the same key) work too.
  const node = await svc.send('POST', '/as/v1/nodes/o1/events', { ready: true, metrics: {} }, svc.signer.nodeToken('g', 'o1', 60_000));
  t.is(node.status, 200);
  const claims = { sub: 'admin', role: 'admin', ver: 1 };
  isProblem(t, await svc.get('/as/v1/nodegroups', jwt.sign(claims, createSecretKey(Buffer.from(JWT_SECRET)), { algorithm: 'HS256', expiresIn: 600 })), 401, 'UNAUTHORIZED');
  const pem = publicKey.export({ type: 'spki', format: 'pem' });
  isProblem(t, await svc.get('/as/v1/nodegroups', jwt.sign(claims, pem, { algorithm: 'HS256', expiresIn: 600 })), 401, 'UNAUTHORIZED');
  await svc.close();
  // The generated key pair is kept: tokens outlive a restart.
  svc = await startTestService({ dataDir, config: { auth: { jwtAlgorithm: 'ES256' } }, noLogin: true });
  t.teardown(() => svc.close());
  t.is((await svc.get('/as/v1/nodegroups', token)).status, 200);
  t.deepEqual(body<{ keys: unknown[] }>(await svc.get('/as/v1/auth/jwks', null)).keys, [jwk]);
});

test('under HS256 the key set is empty, and a key for ES256 is refused with the setting to change', async (t) => {
  const svc = await startTestService();
  t.teardown(() => svc.close());
  t.deepEqual(body(await svc.get('/as/v1/auth/jwks', null)), { keys: [] });
  const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  const problemsOf = (env: Record<string, string>, auth: object = {}) => {
    try {
      parseConfig({ nodeGroups: [staticGroup()], auth }, 'test', env);
      return [];
    } catch (err) {
      return (err as ConfigError).problems;
    }
  };
  t.deepEqual(problemsOf({ SWITCHYARD_JWT_PRIVATE_KEY: pem }), ['SWITCHYARD_JWT_PRIVATE_KEY = (hidden): is for ES256; set auth.jwtAlgorithm to "ES256" (it is "HS256")']);
  t.deepEqual(problemsOf({ SWITCHYARD_JWT_PRIVATE_KEY: 'not a key' }, { jwtAlgorithm: 'ES256' }), ['SWITCHYARD_JWT_PRIVATE_KEY = (hidden): must be a private key in PEM']);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  t.deepEqual(problemsOf({ SWITCHYARD_JWT_PRIVATE_KEY: rsa }, { jwtAlgorithm: 'ES256' }), ['SWITCHYARD_JWT_PRIVATE_KEY = (hidden): must be an EC private key on the P-256 curve (ES256)']);
  t.deepEqual(problemsOf({ SWITCHYARD_JWT_PRIVATE_KEY: pem }, { jwtAlgorithm: 'ES256' }), []);
});

test('on a non-loopback bind the generated initial password only allows changing it, and every user token waits for that', async (t) => {
  const svc = await startTestService({
    config: { server: { host: '0.0.0.0', port: 0 }, auth: { users: [{ username: 'backend', role: 'app', passwordHash: hash('app-secret-password') }] } },
    env: { SWITCHYARD_ADMIN_PASSWORD: '' },
    noLogin: true,
  });
  t.teardown(() => svc.close());
  const file = join(svc.dataDir, 'initial-admin-password');
  const initial = readFileSync(file, 'utf8').trim();
  t.true(initial.length >= 20);
  const token = tokenOf(await login(svc.url, 'admin', initial));
  const app = tokenOf(await login(svc.url, 'backend', 'app-secret-password'));
  isProblem(t, await svc.get('/as/v1/nodegroups', token), 403, 'PASSWORD_CHANGE_REQUIRED');
  isProblem(t, await svc.get('/as/v1/streams/live/cam/publish', token), 403, 'PASSWORD_CHANGE_REQUIRED');
  isProblem(t, await svc.get('/as/v1/streams/live/cam/publish', app), 403, 'PASSWORD_CHANGE_REQUIRED');
  t.is((await svc.send('POST', '/as/v1/auth/password', { currentPassword: initial, newPassword: 'chosen-by-the-operator' }, token)).status, 204);
  t.false(existsSync(file), 'the file with the initial password is gone');
  const fresh = tokenOf(await login(svc.url, 'admin', 'chosen-by-the-operator'));
  t.is((await svc.get('/as/v1/nodegroups', fresh)).status, 200);
  t.not((await svc.get('/as/v1/streams/live/cam/publish', app)).status, 403, 'the app token works once the admin password is changed');
});

test('on loopback the initial password works as is; a password set later by the environment removes its file', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  let svc = await startTestService({ dataDir, env: { SWITCHYARD_ADMIN_PASSWORD: '', SWITCHYARD_JWT_SECRET: '' }, noLogin: true });
  const file = join(svc.dataDir, 'initial-admin-password');
  const initial = readFileSync(file, 'utf8').trim();
  t.is((await svc.get('/as/v1/nodegroups', tokenOf(await login(svc.url, 'admin', initial)))).status, 200);
  await svc.close();
  svc = await startTestService({ dataDir, env: { SWITCHYARD_JWT_SECRET: '' }, noLogin: true });
  t.teardown(() => svc.close());
  t.is((await login(svc.url, 'admin', ADMIN_PASSWORD)).status, 200);
  t.false(existsSync(file), 'the file no longer names a password that works');
});

test('the generated signing secret and a changed password survive a restart; a new env password wins', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const env = { SWITCHYARD_JWT_SECRET: '' };
  let svc = await startTestService({ dataDir, env });
  const token = svc.adminToken;
  t.is((await svc.send('POST', '/as/v1/auth/password', { currentPassword: ADMIN_PASSWORD, newPassword: 'changed-over-the-api' }, token)).status, 204);
  const after = tokenOf(await login(svc.url, 'admin', 'changed-over-the-api'));
  await svc.close();

  svc = await startTestService({ dataDir, env, noLogin: true });
  t.is((await svc.get('/as/v1/nodegroups', after)).status, 200, 'a token from before the restart still works');
  t.is((await login(svc.url, 'admin', 'changed-over-the-api')).status, 200, 'the API change was kept: the env password did not change');
  await svc.close();

  svc = await startTestService({ dataDir, env: { ...env, SWITCHYARD_ADMIN_PASSWORD: 'a-new-env-password' }, noLogin: true });
  t.teardown(() => svc.close());
  t.is((await login(svc.url, 'admin', 'a-new-env-password')).status, 200);
  isProblem(t, await svc.get('/as/v1/nodegroups', after), 401, 'UNAUTHORIZED');
  t.truthy(body(await login(svc.url, 'admin', 'a-new-env-password')).accessToken);
});
