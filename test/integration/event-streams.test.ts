// GET /as/v1/events (Server-Sent Events) over real sockets: what a stream holds is let go when its
// client goes, however the request came, and streams are bounded in number.
import { connect } from 'node:net';
import test from 'ava';
import { MAX_EVENT_STREAMS } from '../../src/http/routes/system.js';
import { isProblem } from '../helpers/assert.js';
import { staticGroup, startTestService, type TestService } from '../helpers/service.js';
import { until } from '../helpers/until.js';

const openStreams = async (svc: TestService) => Number(/^switchyard_event_streams (\d+)$/m.exec((await svc.get('/as/v1/metrics')).text)?.[1]);

/** The number of open streams once `ok` holds of it (asked again until it does). */
const openStreamsOnce = async (svc: TestService, ok: (n: number) => boolean) =>
  (
    await until(
      async () => {
        const n = await openStreams(svc);
        return ok(n) && { n };
      },
      15_000,
      'the open streams to settle',
    )
  ).n;

test('a stream asked for with an Upgrade header is let go when its client goes, as any other', async (t) => {
  const svc = await startTestService({ groups: [staticGroup()] });
  t.teardown(() => svc.close());
  const url = new URL(svc.url);
  const socket = connect(Number(url.port), url.hostname);
  socket.write(`GET /as/v1/events HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${svc.adminToken}\r\nConnection: Upgrade\r\nUpgrade: foo\r\n\r\n`);
  let text = '';
  await new Promise<void>((resolve) =>
    socket.on('data', (chunk) => {
      text += chunk.toString();
      if (text.includes(': switchyard events')) resolve();
    }),
  );
  t.regex(text, /^HTTP\/1\.1 200 /);
  t.is(await openStreams(svc), 1);
  socket.destroy();
  t.is(await openStreamsOnce(svc, (n) => n === 0), 0, 'its subscription and timer went with it');
});

test(`at most ${MAX_EVENT_STREAMS} streams are open at once; the next is told to retry`, async (t) => {
  const svc = await startTestService({ groups: [staticGroup()] });
  t.teardown(() => svc.close());
  const aborts = Array.from({ length: MAX_EVENT_STREAMS }, () => new AbortController());
  t.teardown(() => {
    for (const a of aborts) a.abort();
  });
  const opened = await Promise.all(aborts.map((a) => fetch(`${svc.url}/as/v1/events`, { headers: { authorization: `Bearer ${svc.adminToken}` }, signal: a.signal })));
  t.true(opened.every((r) => r.status === 200));
  const refused = await svc.get('/as/v1/events');
  isProblem(t, refused, 429, 'RATE_LIMITED');
  t.is(refused.headers.get('retry-after'), '5');
  aborts[0]!.abort();
  t.is(await openStreamsOnce(svc, (n) => n < MAX_EVENT_STREAMS), MAX_EVENT_STREAMS - 1);
  const again = new AbortController();
  t.teardown(() => again.abort());
  t.is((await fetch(`${svc.url}/as/v1/events`, { headers: { authorization: `Bearer ${svc.adminToken}` }, signal: again.signal })).status, 200, 'a place freed is taken again');
});
