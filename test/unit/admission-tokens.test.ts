// Admission tokens (docs/security.md, "Who may publish and play"): what a node accepts is exactly
// what the service granted: one stream, one node, one action, for a while; forged, altered,
// foreign-key and garbage tokens are refused without a throw; and a token fits an RTMP stream
// name's query beside the longest stream name (nginx-rtmp keeps 255 bytes of it).
import test from 'ava';
import fc from 'fast-check';
import { type AdmissionRequest, type GrantClaims, judge } from '../../src/admission/grant.js';
import { AdmissionIssuer, MAX_GRANT_LIFE_MS, NODE_CREDENTIAL_PERIOD_MS } from '../../src/admission/issuer.js';
import { fromWire, NodeKeys } from '../../src/admission/node-keys.js';
import { MAX_TOKEN_LENGTH, signGrant, type TokenScope, verifyGrant } from '../../src/admission/token.js';

const SECRET = Buffer.alloc(32, 7);
const name = fc.stringMatching(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,15}$/);
const stream = fc.stringMatching(/^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,20}$/);
const action = fc.constantFrom('publish' as const, 'play' as const);
const T0 = 1_800_000_000_000;
const policy = { leewayMs: 0, maxLifeMs: MAX_GRANT_LIFE_MS };

/** A node's view: the keys its reply gave it. */
function nodeView(keys: NodeKeys, group: string, nodeId: string, gen = 0) {
  const issuer = new AdmissionIssuer(keys, () => gen);
  return new Map([fromWire(issuer.keyOf(group, nodeId))]);
}

test('a client token admits exactly its action, stream and node until it expires, and nothing else', (t) => {
  fc.assert(
    fc.property(name, name, name, stream, stream, action, fc.integer({ min: 1, max: 3600 }), fc.integer({ min: -5000, max: 4_000_000 }), (group, node, other, s, s2, act, ttlS, dt) => {
      const keys = new NodeKeys(SECRET);
      let now = T0;
      const issuer = new AdmissionIssuer(
        keys,
        () => 0,
        () => now,
      );
      const { token, expiresAt } = issuer.client(group, node, act, s, ttlS * 1000);
      t.true(`${'x'.repeat(128)}?token=${token}`.length <= 255, 'fits an RTMP stream name with the longest name');
      const req = (r: Partial<AdmissionRequest>): AdmissionRequest => ({ action: act, group, nodeId: node, stream: s, now: T0 + dt, ...r });
      const decide = (nodeId: string, r: AdmissionRequest) => {
        const v = verifyGrant(token, nodeView(keys, group, nodeId), { group: r.group, nodeId: r.nodeId, stream: r.stream });
        return v.ok ? judge(v.claims, r, policy).ok : false;
      };
      const inTime = T0 + dt <= expiresAt && dt >= 0;
      t.is(decide(node, req({})), inTime, 'its own request: admitted while valid');
      if (other !== node) t.false(decide(other, req({ nodeId: other })), 'another node refuses it (another key, and another nid)');
      if (s2 !== s) t.false(decide(node, req({ stream: s2 })), 'another stream is refused');
      t.false(decide(node, req({ action: act === 'publish' ? 'play' : 'publish' })), 'the other action is refused');
      now = T0;
    }),
  );
});

test('a relay credential lets the child pull any stream from the parent it names, never publish, and only there', (t) => {
  fc.assert(
    fc.property(name, name, name, stream, fc.integer({ min: 0, max: NODE_CREDENTIAL_PERIOD_MS - 1 }), (group, parent, child, s, offset) => {
      const keys = new NodeKeys(SECRET);
      const now = T0 + offset;
      const issuer = new AdmissionIssuer(
        keys,
        () => 0,
        () => now,
      );
      const credential = issuer.relay(group, parent, child);
      t.is(issuer.relay(group, parent, child), credential, 'the same all period long: configs that carry it do not churn');
      t.true(credential.length < 160, 'fits a pageUrl');
      const v = verifyGrant(credential, nodeView(keys, group, parent), { group, nodeId: parent, stream: s });
      t.true(v.ok);
      if (v.ok) t.is(v.claims.sub, child);
      if (!v.ok) return;
      t.true(judge(v.claims, { action: 'play', group, nodeId: parent, stream: s, now }, policy).ok);
      t.false(judge(v.claims, { action: 'publish', group, nodeId: parent, stream: s, now }, policy).ok);
      // Still good at the end of the next period, not after.
      const periodStart = now - (now % NODE_CREDENTIAL_PERIOD_MS);
      t.true(judge(v.claims, { action: 'play', group, nodeId: parent, stream: s, now: periodStart + 2 * NODE_CREDENTIAL_PERIOD_MS - 1 }, policy).ok);
      t.false(judge(v.claims, { action: 'play', group, nodeId: parent, stream: s, now: periodStart + 2 * NODE_CREDENTIAL_PERIOD_MS + 1000 }, policy).ok);
      if (child !== parent) t.false(verifyGrant(credential, nodeView(keys, group, child), { group, nodeId: child, stream: s }).ok, "the child's own key does not verify it");
    }),
  );
});

test("a node's new token generation retires its key and every token made with it", (t) => {
  const keys = new NodeKeys(SECRET);
  let gen = 0;
  const issuer = new AdmissionIssuer(keys, () => gen);
  const scope: TokenScope = { group: 'g', nodeId: 'n1', stream: 'cam1' };
  const token = issuer.client('g', 'n1', 'publish', 'cam1', 60_000).token;
  t.true(verifyGrant(token, nodeView(keys, 'g', 'n1', 0), scope).ok);
  gen = 1;
  t.false(verifyGrant(token, nodeView(keys, 'g', 'n1', 1), scope).ok);
  t.true(verifyGrant(issuer.client('g', 'n1', 'publish', 'cam1', 60_000).token, nodeView(keys, 'g', 'n1', 1), scope).ok);
  t.false(verifyGrant(token, nodeView(new NodeKeys(Buffer.alloc(32, 8)), 'g', 'n1', 0), scope).ok, 'another service secret, another key');
});

test('a publish token issued before its stream was dropped from the node is refused; one issued in a later second is not', (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 0, max: 10_000 }), (issuedAfterMs, droppedAfterMs) => {
      const keys = new NodeKeys(SECRET);
      const issuedAt = T0 + issuedAfterMs;
      const droppedAt = T0 + droppedAfterMs;
      const token = new AdmissionIssuer(
        keys,
        () => 0,
        () => issuedAt,
      ).client('g', 'o1', 'publish', 'cam1', 60_000).token;
      const v = verifyGrant(token, nodeView(keys, 'g', 'o1'), { group: 'g', nodeId: 'o1', stream: 'cam1' });
      if (!v.ok) return t.fail();
      const verdict = judge(v.claims, { action: 'publish', group: 'g', nodeId: 'o1', stream: 'cam1', now: T0 + 20_000 }, { ...policy, droppedSince: (s) => (s === 'cam1' ? droppedAt : undefined) });
      t.is(verdict.ok, Math.floor(issuedAt / 1000) > Math.floor(droppedAt / 1000));
      t.true(judge(v.claims, { action: 'publish', group: 'g', nodeId: 'o1', stream: 'cam1', now: T0 + 20_000 }, { ...policy, droppedSince: () => undefined }).ok);
    }),
  );
});

test('a token that claims a longer life than any token is given, or was issued in the future, is refused whatever its signature', (t) => {
  const keys = new NodeKeys(SECRET);
  const key = keys.of('g', 'n1', 0);
  const view = nodeView(keys, 'g', 'n1');
  const base: GrantClaims = { act: 'play', grp: 'g', nid: 'n1', str: 's', iat: T0 / 1000, exp: T0 / 1000 + 60, jti: '0123456789abcdef' };
  const decide = (c: GrantClaims, now = T0, leewayMs = 0) => {
    const v = verifyGrant(signGrant(c, key), view, { group: 'g', nodeId: 'n1', stream: 's' });
    return v.ok && judge(v.claims, { action: 'play', group: 'g', nodeId: 'n1', stream: 's', now }, { leewayMs, maxLifeMs: MAX_GRANT_LIFE_MS });
  };
  t.truthy(decide(base));
  t.false((decide({ ...base, exp: base.iat + MAX_GRANT_LIFE_MS / 1000 + 1 }) as { ok: boolean }).ok);
  t.false((decide({ ...base, iat: base.iat + 10, exp: base.exp + 10 }) as { ok: boolean }).ok, 'issued 10 s in the future');
  t.true((decide({ ...base, iat: base.iat + 10, exp: base.exp + 10 }, T0, 30_000) as { ok: boolean }).ok, 'within the clock leeway');
  t.throws(() => decide({ ...base, exp: base.iat - 1 }), { message: /lives/ }, 'a token that ends before it starts cannot even be written');
});

test('garbage, altered, truncated and forged tokens are refused with a reason, never a throw', (t) => {
  const keys = new NodeKeys(SECRET);
  const view = nodeView(keys, 'g', 'n1');
  const scope: TokenScope = { group: 'g', nodeId: 'n1', stream: 'cam1' };
  const issuer = new AdmissionIssuer(keys, () => 0);
  const good = issuer.client('g', 'n1', 'publish', 'cam1', 60_000).token;
  const bytes = Buffer.from(good, 'base64url');
  const flipped = (i: number) => {
    const b = Buffer.from(bytes);
    b[i] = b[i]! ^ 1;
    return b.toString('base64url');
  };
  t.true(verifyGrant(good, view, scope).ok);
  // Every bit of the token matters: action, times, key, id and MAC.
  for (let i = 0; i < bytes.length; i++) t.false(verifyGrant(flipped(i), view, scope).ok, `byte ${i} altered`);
  for (const bad of [good.slice(0, -1), `${good}A`, '', 'a'.repeat(MAX_TOKEN_LENGTH + 1), `${good}.x`, good.replace(/[A-Za-z]/, '%')]) {
    const v = verifyGrant(bad, view, scope);
    t.false(v.ok, bad.slice(0, 60));
    if (!v.ok) t.true(v.reason.length > 0);
  }
  // Another node's, stream's or group's scope does not verify it.
  for (const other of [
    { ...scope, nodeId: 'n2' },
    { ...scope, stream: 'cam2' },
    { ...scope, group: 'h' },
  ])
    t.false(verifyGrant(good, view, other).ok);
  fc.assert(
    fc.property(
      fc.oneof(
        fc.string({ maxLength: 400 }),
        fc.base64String({ maxLength: 200 }),
        fc.uint8Array({ minLength: 30, maxLength: 120 }).map((b) => Buffer.from(b).toString('base64url')),
      ),
      (garbage) => {
        const v = verifyGrant(garbage, view, scope);
        return v.ok === (garbage === good);
      },
    ),
  );
  t.throws(() => signGrant({ act: 'play', grp: 'g', nid: 'n1', str: 's', iat: 0, exp: 70_000 }, keys.of('g', 'n1', 0)), { message: /65535/ });
});
