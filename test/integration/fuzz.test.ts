// Random requests against the live server: never a 5xx (but the documented 503s), never a hang,
// always problem+json for errors, and the server still answers afterwards. `npm run fuzz` runs
// the long form (FUZZ_RUNS, default 100k here).
import test from 'ava';
import fc from 'fast-check';
import { allInService } from '../helpers/fake-node.js';
import { checkReply, requestArb, send } from '../helpers/fuzz.js';
import { hash } from '../../src/auth/scrypt-task.js';
import { request } from '../helpers/http.js';
import { staticGroup, startTestService } from '../helpers/service.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 5000);

test('no request a client can send gets a 5xx, a hang or a non-problem error', async (t) => {
  t.timeout(60_000 + RUNS * 20);
  const started = Date.now();
  const roomy = staticGroup({ rules: ['r1', 'r2'].flatMap((region) => ['origin', 'edge', 'transcoder'].map((role) => ({ region, role, min: 0, max: 4, limit: 1_000_000 }))) });
  const svc = await startTestService({ groups: [roomy], config: { auth: { users: [{ username: 'app', role: 'app', passwordHash: hash('app-password-123') }], loginThrottle: { maxFailures: 1_000_000 } } } });
  t.teardown(() => svc.close());
  const nodes = await allInService(svc, 'g', ['o1', 'o2', 'o3', 'e1', 'e2', 'e3', 't1']);
  const app = ((await request(svc.url, 'POST', '/as/v1/auth/login', { username: 'app', password: 'app-password-123' })).json as { accessToken: string }).accessToken;
  const tokens = [svc.adminToken, app, nodes.get('o1')!.token, nodes.get('e1')!.token];
  await fc.assert(
    fc.asyncProperty(requestArb(tokens), async (req) => {
      const reply = await send(svc.url, req);
      const problem = checkReply(req, reply);
      if (problem) throw new Error(problem);
    }),
    { numRuns: RUNS },
  );
  t.log(`${RUNS} requests in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  t.is((await request(svc.url, 'GET', '/as/v1/healthz')).status, 200, 'still answering');
  t.is((await svc.get('/as/v1/streams')).status, 200);
});
