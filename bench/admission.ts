// `npm run bench:admission`: what an admission token costs a lookup (signing, on the service) and
// a connection (checking, on the node), against the JWTs it could have been (docs/security.md,
// "Who may publish and play"). In-process, one thread; every figure is set against jsonwebtoken's
// HS256 signing measured in the same run.
import jwt from 'jsonwebtoken';
import { AdmissionGate } from '../src/agent/admission/gate.js';
import { AdmissionIssuer } from '../src/admission/issuer.js';
import { NodeKeys } from '../src/admission/node-keys.js';
import { createSecretKey, generateKeyPairSync } from 'node:crypto';
import { pct, table } from './lib/table.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const ROUNDS = 10;

/** Operations a second of `op` over `ms`. */
function slice(op: (i: number) => unknown, ms: number): number {
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < ms) {
    for (let i = 0; i < 200; i++) op(n + i);
    n += 200;
  }
  return n / ((performance.now() - start) / 1000);
}

/**
 * Each operation's best rate over ROUNDS rounds in which every operation runs in turn: on a
 * machine others share, the best slice is the one least disturbed, and turns spread the
 * disturbance over all the operations alike.
 */
function rates(ops: Array<(i: number) => unknown>): number[] {
  for (const op of ops) for (let i = 0; i < 2000; i++) op(i);
  const best = ops.map(() => 0);
  for (let r = 0; r < ROUNDS; r++) {
    for (const [k, op] of ops.entries()) best[k] = Math.max(best[k]!, slice(op, (SECONDS * 1000) / ROUNDS));
  }
  return best;
}

const issuer = new AdmissionIssuer(new NodeKeys(Buffer.alloc(32, 5)), () => 0);
const gate = new AdmissionGate('g', 'us-east-origin-3192b6');
gate.update({ required: true, keys: [issuer.keyOf('g', 'us-east-origin-3192b6')], leewayMs: 30_000 }, undefined);
const token = issuer.client('g', 'us-east-origin-3192b6', 'publish', 'cam1', 120_000).token;
const hs = createSecretKey(Buffer.alloc(32, 6));
const es = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const claims = { act: 'publish', grp: 'g', nid: 'us-east-origin-3192b6', str: 'cam1', sub: 'app' };
const hsToken = jwt.sign(claims, hs, { algorithm: 'HS256', expiresIn: 120 });
const esToken = jwt.sign(claims, es.privateKey, { algorithm: 'ES256', expiresIn: 120 });

const ops: Array<[string, number, (i: number) => unknown]> = [
  ['sign: JWT HS256 (jsonwebtoken), baseline', hsToken.length, () => jwt.sign(claims, hs, { algorithm: 'HS256', expiresIn: 120 })],
  ['sign: JWT ES256 (jsonwebtoken)', esToken.length, () => jwt.sign(claims, es.privateKey, { algorithm: 'ES256', expiresIn: 120 })],
  ['sign: admission token (per-node HMAC)', token.length, (i) => issuer.client('g', 'us-east-origin-3192b6', 'publish', `cam${i % 1000}`, 120_000)],
  ['check at the node: admission token', token.length, () => gate.check('publish', 'cam1', token)],
  ['check: JWT ES256 (jsonwebtoken verify)', esToken.length, () => jwt.verify(esToken, es.publicKey, { algorithms: ['ES256'] })],
];
const measured = rates(ops.map(([, , op]) => op));
const baseline = measured[0]!;
console.log(`admission tokens: the best of ${ROUNDS} turns, ${SECONDS} s per operation, ${new Date().toISOString().slice(0, 10)}`);
console.log(
  table(
    ['operation', 'token chars', 'per second', 'vs JWT HS256 signing'],
    ops.map(([name, length], k) => [name, length, Math.round(measured[k]!), pct(measured[k]!, baseline)]),
  ),
);
