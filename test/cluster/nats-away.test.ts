// Every NATS server unreachable (docs/cluster.md): the owner of a group keeps answering lookups of
// bound streams, also long past its lease; a lookup that would bind gets 503 STORE_UNAVAILABLE
// with Retry-After; an instance started meanwhile waits, its readyz saying why; when NATS returns,
// writes come back and the waiting instance joins, with nothing acknowledged lost.
import test from 'ava';
import { request } from '../helpers/http.js';
import { Cluster, clusterConfig, clusterGroup, slowBindings } from '../helpers/cluster.js';
import { freePort } from '../helpers/ports.js';
import { until } from '../helpers/until.js';

test('all NATS servers gone: the owner answers bound streams and refuses new ones with 503, a new instance waits, everything resumes when NATS returns', async (t) => {
  const c = await Cluster.start(t, clusterConfig([slowBindings(clusterGroup('g', 80))], '1s'), { instances: 2 });
  await c.ready();
  const token = await c.login(c.instances[0]!);
  const auth = { authorization: `Bearer ${token}` };
  const owner = c.byId((await c.ownerOf('g'))!);
  await until(async () => (await request(owner.url, 'GET', '/as/v1/streams/live/probe/publish?nodeGroup=g', undefined, auth)).status === 200, 30_000, 'an origin in service');
  const bound = new Map<string, string>();
  for (let i = 0; i < 20; i++) {
    const r = await request(owner.url, 'GET', `/as/v1/streams/live/b${i}/publish?nodeGroup=g`, undefined, auth);
    t.is(r.status, 200, r.text);
    bound.set(`b${i}`, (r.json as { nodeId: string }).nodeId);
  }

  for (const s of c.nats.servers) await c.nats.kill(s);
  // A new instance started now waits for NATS, and says so.
  const late = c.add();
  late.port = await freePort();
  const starting = c.spawn(late);
  // Awaited below; handled now so that a failure before then reports itself, not an unhandled rejection.
  starting.catch(() => {});
  const lateUrl = `http://127.0.0.1:${late.port}`;
  await until(async () => (await request(lateUrl, 'GET', '/as/v1/healthz')).status === 200, 20_000, 'the new instance answering while it waits');
  const waiting = await request(lateUrl, 'GET', '/as/v1/readyz');
  t.is(waiting.status, 503);
  t.regex((waiting.json as { detail: string }).detail, /NATS/);

  // Reads for longer than the lease could ride (12 s): each bound stream, again and again.
  const started = Date.now();
  let reads = 0;
  let k = 0;
  while (Date.now() - started < 13_000) {
    const stream = `b${k++ % bound.size}`;
    const r = await request(owner.url, 'GET', `/as/v1/streams/live/${stream}/publish?nodeGroup=g`, undefined, auth);
    t.is(r.status, 200, `${stream} ${Date.now() - started} ms into the outage: ${r.text}`);
    t.is((r.json as { nodeId?: string }).nodeId, bound.get(stream));
    reads++;
    if (k % 10 === 0) {
      const w = await request(owner.url, 'GET', `/as/v1/streams/live/new${k}/publish?nodeGroup=g`, undefined, auth);
      t.is(w.status, 503, w.text);
      t.is((w.json as { code: string }).code, 'STORE_UNAVAILABLE');
      t.truthy(w.headers.get('retry-after'));
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  t.log(`${reads} lookups of bound streams answered by the owner over ${Date.now() - started} ms without NATS`);

  for (const s of c.nats.servers) await c.nats.restart(s, false);
  await c.nats.ready();
  await starting;
  await c.ready(60_000);
  // Writes come back, through every instance (the late one too).
  for (const i of c.running()) {
    await until(async () => (await request(i.url, 'GET', `/as/v1/streams/live/after-${i.id}/publish?nodeGroup=g`, undefined, auth)).status === 200, 30_000, `a new binding through ${i.id}`);
  }
  for (const [stream, nodeId] of bound) {
    // The late instance may just be taking its share of groups (a hand-over answers 503 NOT_READY
    // with Retry-After for as long as it lasts): ask again as a client would.
    let r = await request(lateUrl, 'GET', `/as/v1/streams/live/${stream}/publish?nodeGroup=g`, undefined, auth);
    await until(
      async () => {
        if (r.status !== 503) return true;
        r = await request(lateUrl, 'GET', `/as/v1/streams/live/${stream}/publish?nodeGroup=g`, undefined, auth);
        return r.status !== 503;
      },
      30_000,
      `${stream} through the late instance`,
    );
    t.is((r.json as { nodeId?: string }).nodeId, nodeId, `${stream}: ${r.text}`);
  }
});
