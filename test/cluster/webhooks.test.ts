// Webhooks in cluster mode (docs/webhooks.md, docs/cluster.md), on a real 3-server NATS cluster
// and 3 real instances: an endpoint made through one instance's API is shared by all; one
// instance (the webhooks lease's holder) sends each event once, in id order, signed (the receiver,
// its own process, checks every signature with standardwebhooks); every instance's API shows the
// shared delivery state; kill -9 of the sending instance mid-stream: another takes over from the
// last cursor written and nothing is lost, the order kept (a resend only of what came before the
// kill); SIGTERM of the next sender mid-stream: a clean hand-over, nothing sent again.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { openEvents } from '../../src/events/stream-client.js';
import { projectPath } from '../../src/paths.js';
import { staticGroup } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { Cluster, clusterConfig, metricOf, type Instance } from '../helpers/cluster.js';
import { until } from '../helpers/until.js';
import { freePort } from '../helpers/ports.js';

// The loopback address of this test's receiver (this test's range: 127.3.x.x).
const HOST = '127.3.0.1';
const ladder = (streamName: string) => ({
  streamName,
  region: 'r1',
  streams: [{ name: `${streamName}_lo`, level: 1, videoBR: 500_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 }],
});

type Received = { id?: string; seq?: number; stream?: string; bad?: boolean };
const receivedIn = (file: string): Received[] =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Received)
    : [];

/** Creates a provision through `via`, again while its group changes owner (503): an event `provision.changed` each. */
async function provision(via: () => Instance, auth: Record<string, string>, name: string): Promise<void> {
  await until(
    async () => {
      const r = await request(via().url, 'POST', '/as/v1/provision/g', ladder(name), auth).catch(() => null);
      // 409: an attempt whose answer was lost had made it.
      return r?.status === 201 || r?.status === 409;
    },
    60_000,
    `provision ${name}`,
  );
}

test('one instance sends each event once and in order; kill -9 of it mid-stream loses nothing; SIGTERM of the next hands over cleanly', async (t) => {
  const c = await Cluster.start(t, clusterConfig([staticGroup({ name: 'g' })]));
  await c.ready();
  const token = await c.login(c.instances[0]!);
  const auth = { authorization: `Bearer ${token}` };
  const file = join(c.dir, 'received.jsonl');
  const port = await freePort();
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const rx: ChildProcess = spawn(process.execPath, [projectPath('dist', 'test', 'helpers', 'webhook-receiver.js'), String(port), secret, file], {
    stdio: ['ignore', 'pipe', 'inherit'],
    // Answers 100 ms after it took an event: a hand-over finds a request under way.
    env: { ...process.env, WEBHOOK_RECEIVER_HOST: HOST, WEBHOOK_RECEIVER_ANSWER_MS: '100' },
  });
  t.teardown(() => void rx.kill('SIGKILL'));
  await new Promise<void>((resolve, reject) => {
    rx.stdout!.once('data', () => resolve());
    rx.once('exit', (code) => reject(new Error(`the receiver exited ${code}`)));
  });

  // Made through i1's API: every instance has it.
  const made = await request(c.instances[0]!.url, 'POST', '/as/v1/webhooks', { id: 'rx', url: `http://${HOST}:${port}/hook`, secret, events: ['provision.*'] }, auth);
  t.is(made.status, 201, made.text);
  for (const i of c.instances) await until(async () => (await request(i.url, 'GET', '/as/v1/webhooks/rx', undefined, auth)).status === 200, 15_000, `the endpoint on ${i.id}`);

  // Exactly one sender.
  const senders = async () => (await Promise.all(c.running().map(async (i) => ((await metricOf(i, 'switchyard_cluster_webhook_sender')) === 1 ? i : null)))).filter((i) => i !== null);
  await until(async () => (await senders()).length === 1, 30_000, 'one instance sending webhooks');
  const sender = (await senders())[0]!;
  const others = c.instances.filter((i) => i !== sender);
  t.log(`sender: ${sender.id}`);

  // The normal case: 15 events, each received once, in order.
  let n = 0;
  for (; n < 15; n++) await provision(() => others[n % 2]!, auth, `a${n}`);
  await until(() => receivedIn(file).length >= 15, 30_000, '15 events received');
  const before = receivedIn(file);
  t.deepEqual(
    before.filter((r) => r.bad),
    [],
    'every signature verified',
  );
  const seqs = before.map((r) => r.seq!);
  t.deepEqual(
    seqs,
    [...new Set(seqs)].sort((a, b) => a - b),
    'no duplicate, in id order',
  );
  t.deepEqual(
    before.map((r) => r.stream),
    Array.from({ length: 15 }, (_, k) => `a${k}`),
  );
  // The shared delivery state, on every instance.
  for (const i of c.instances)
    await until(
      async () => (((await request(i.url, 'GET', '/as/v1/webhooks/rx', undefined, auth)).json as { delivery?: { cursor: number } }).delivery?.cursor ?? 0) >= seqs.at(-1)!,
      15_000,
      `${i.id} shows the cursor at ${seqs.at(-1)}`,
    );

  // Mid-stream: 15 more from the two others; the sender is killed once it has sent some of them.
  const producing = (async () => {
    for (; n < 30; n++) await provision(() => others[n % 2]!, auth, `a${n}`);
  })();
  await until(() => receivedIn(file).length >= 18, 30_000, 'some of the next events received');
  const atKill = receivedIn(file).length;
  await c.kill(sender, 'SIGKILL');
  await producing;
  await until(async () => (await senders()).length === 1, 60_000, 'another instance sending webhooks');
  const second = (await senders())[0]!;
  t.log(`sender after the kill: ${second.id}`);

  // A clean hand-over: SIGTERM of the sender mid-stream. It finishes the request under way and
  // writes its cursor before it hands the lease back: the last instance sends nothing again.
  const lastOne = c.running().find((i) => i !== second)!;
  const beforeTerm = receivedIn(file).length;
  const more = (async () => {
    for (; n < 40; n++) await provision(() => lastOne, auth, `a${n}`);
  })();
  await until(() => receivedIn(file).length >= beforeTerm + 3, 30_000, 'some events sent by the second sender');
  const atTerm = receivedIn(file).length;
  await c.kill(second, 'SIGTERM');
  await more;
  await until(async () => (await senders()).length === 1, 60_000, 'the last instance sending webhooks');
  t.log(`sender after the SIGTERM: ${(await senders())[0]!.id}`);
  // What the log holds: a provision whose owner was killed between its commit and its event has
  // none (the event log's matter, not delivery's). A last provision marks the end.
  await provision(() => lastOne, auth, 'end');
  const logged: Received[] = [];
  for await (const e of await openEvents(lastOne.url, token, { since: 0, signal: AbortSignal.timeout(60_000) })) {
    const p = e as { type: string; seq: number; stream?: string };
    if (p.type !== 'provision.changed') continue;
    logged.push({ seq: p.seq, stream: p.stream });
    if (p.stream === 'end') break;
  }
  t.log(`${logged.length - 1} of the 40 provisions have an event in the log`);
  await until(() => logged.every((l) => receivedIn(file).some((r) => r.seq === l.seq)), 60_000, 'every event of the log received');

  const all = receivedIn(file);
  t.deepEqual(
    all.filter((r) => r.bad),
    [],
    'every signature verified',
  );
  // Nothing lost, order kept: the first time each arrives, exactly the log's events, in id order.
  const firsts: Received[] = [];
  for (const r of all) if (!firsts.some((f) => f.seq === r.seq)) firsts.push(r);
  t.deepEqual(
    firsts.map((r) => ({ seq: r.seq, stream: r.stream })),
    logged,
  );
  t.deepEqual(
    firsts.map((r) => r.seq),
    firsts.map((r) => r.seq).sort((a, b) => a! - b!),
  );
  t.true(logged.some((l) => l.stream === 'a29') && logged.some((l) => l.stream === 'a39'), 'the provisions after the kill are in the log');
  // A resend only of what came before the kill, and only once the new sender took over.
  const resent = all.filter((r, k) => all.findIndex((x) => x.seq === r.seq) !== k);
  t.true(
    resent.every((r) => all.slice(0, atKill).some((x) => x.seq === r.seq)),
    `resent: ${resent.map((r) => r.seq).join(', ')}`,
  );
  t.deepEqual(
    all.slice(0, atKill).map((r) => r.seq),
    [...new Set(all.slice(0, atKill).map((r) => r.seq))],
    'no duplicate before the kill',
  );
  t.deepEqual(
    all.slice(atTerm).filter((r) => all.slice(0, atTerm).some((x) => x.seq === r.seq)),
    [],
    'nothing sent again after the SIGTERM hand-over',
  );
  t.log(`${all.length} requests for ${logged.length} events; resent after the takeover: ${resent.length}`);
  // The survivors' API: the cursor at the last event.
  const last = firsts.at(-1)!.seq;
  for (const i of c.running())
    await until(
      async () => (((await request(i.url, 'GET', '/as/v1/webhooks/rx', undefined, auth)).json as { delivery?: { cursor: number } }).delivery?.cursor ?? 0) >= last!,
      15_000,
      `${i.id} shows the cursor at ${last}`,
    );
});
