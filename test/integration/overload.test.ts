// One client cannot exhaust capacity or money (security audit of 2026-11): lookups are limited per
// token subject, and new streams past a group's PENDING caps are refused with 429, not bought
// with a new node.
import test from 'ava';
import { hash } from '../../src/auth/scrypt-task.js';
import { isProblem } from '../helpers/assert.js';
import { allInService } from '../helpers/fake-node.js';
import { waitForEvents } from '../helpers/events.js';
import { request } from '../helpers/http.js';
import { staticGroup, startTestService } from '../helpers/service.js';

const appUser = { username: 'backend', role: 'app', passwordHash: hash('app-secret-password') };
const appToken = async (url: string) => ((await request(url, 'POST', '/as/v1/auth/login', { username: 'backend', password: 'app-secret-password' })).json as { accessToken: string }).accessToken;

test("lookups past a token subject's rate get 429 with Retry-After; another subject is not held back", async (t) => {
  // The front end's clock stands still: no bucket refills during the test, whatever the machine's pace.
  const now = Date.now();
  const svc = await startTestService({ now: () => now, config: { auth: { users: [appUser] }, limits: { lookups: { admin: { perSecond: 1, burst: 3 } } } } });
  t.teardown(() => svc.close());
  await allInService(svc, 'g', ['o1', 'e1']);
  const answers = [];
  for (let i = 0; i < 20; i++) answers.push(await svc.get('/as/v1/streams/live/cam/publish'));
  t.deepEqual(
    answers.slice(0, 3).map((r) => r.status),
    [200, 200, 200],
    'the burst',
  );
  const limited = answers.filter((r) => r.status === 429);
  t.is(limited.length, 17, `twenty lookups, three in the bucket and a clock that stands still: ${answers.map((r) => r.status).join(',')}`);
  const p = isProblem(t, limited[0]!, 429, 'RATE_LIMITED');
  t.regex(p.detail, /limits\.lookups\.admin/);
  t.true(Number(limited[0]!.headers.get('retry-after')) >= 1);
  // The app's token has a bucket of its own (and its role's default rate).
  const app = await appToken(svc.url);
  for (let i = 0; i < 20; i++) t.is((await svc.get('/as/v1/streams/live/cam/publish', app)).status, 200);
});

test('a publish lookup of a new stream past the PENDING caps gets 429, not a new node; known streams and other tokens still get theirs', async (t) => {
  const group = {
    ...staticGroup({
      name: 'g',
      regions: ['r1'],
      nodes: [
        { id: 'o1', role: 'origin', region: 'r1' },
        { id: 'o2', role: 'origin', region: 'r1' },
      ],
    }),
    limits: { pendingPerToken: 3, pendingBindings: 5 },
  };
  const svc = await startTestService({ groups: [group], config: { auth: { users: [appUser] } } });
  t.teardown(() => svc.close());
  const nodes = await allInService(svc, 'g', ['o1', 'o2']);
  for (let i = 0; i < 3; i++) t.is((await svc.get(`/as/v1/streams/live/s${i}/publish`)).status, 200);
  const refused = isProblem(t, await svc.get('/as/v1/streams/live/s3/publish'), 429, 'RATE_LIMITED');
  t.regex(refused.detail, /limits\.pendingPerToken/);
  t.is((await svc.get('/as/v1/streams/live/s0/publish')).status, 200, 'a stream already bound is not new');
  const app = await appToken(svc.url);
  t.is((await svc.get('/as/v1/streams/live/a0/publish', app)).status, 200);
  t.is((await svc.get('/as/v1/streams/live/a1/publish', app)).status, 200);
  t.regex(isProblem(t, await svc.get('/as/v1/streams/live/a2/publish', app), 429, 'RATE_LIMITED').detail, /limits\.pendingBindings/);
  // A stream that goes LIVE frees its place.
  const origin = (await svc.get('/as/v1/streams/live/s0/publish')).json as { nodeId: string };
  await nodes.get(origin.nodeId)!.beat({ streams: [{ name: 's0', publishing: true }] });
  t.is((await svc.get('/as/v1/streams/live/s3/publish')).status, 200);
  // Nothing asked for capacity: the refusals were not a lack of room.
  const seen = await waitForEvents(svc.url, svc.adminToken, (events) => events.some((e) => e.type === 'stream.live' && e.stream === 's0'));
  t.false(seen.some((e) => e.type === 'scaling.request'));
});
