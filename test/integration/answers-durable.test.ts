// No answer before its write is durable (docs/persistence.md), for answers that reveal what another call is
// still writing too: two concurrent lookups of one new stream, the first one's commit held open
// (the test holds LMDB's write lock), then kill -9 and a restart. Whatever either lookup answered
// must still be true after the restart. On the code before this rule, the second lookup found the
// binding in the actor's memory and answered at once, and the crash took that binding back.
import test, { type ExecutionContext } from 'ava';
import { TokenSigner } from '../../src/auth/tokens.js';
import { holdWrites } from '../helpers/hold-writes.js';
import { request, type Reply } from '../helpers/http.js';
import { OwnService } from '../helpers/process.js';
import { ladder } from '../helpers/fixtures.js';

const SECRET = 'answers-durable-secret-at-least-32-bytes';

function config(durability: 'commit' | 'flush') {
  return {
    server: { host: '127.0.0.1', port: 0 },
    geoip: { enabled: false },
    durability,
    nodeGroups: [
      {
        name: 'g',
        platform: {
          type: 'static',
          static: {
            nodes: [
              { id: 'o1', role: 'origin', region: 'r1', address: '10.0.0.1' },
              { id: 'o2', role: 'origin', region: 'r1', address: '10.0.0.2' },
              { id: 'e1', role: 'edge', region: 'r1', address: '10.0.0.3' },
              { id: 't1', role: 'transcoder', region: 'r1', address: '10.0.0.4' },
            ],
          },
        },
        regions: [{ name: 'r1', lat: 50, lon: 0 }],
        roles: { origin: {}, edge: { parentRole: 'origin' }, transcoder: {} },
        rules: ['origin', 'edge', 'transcoder'].map((role) => ({ region: 'r1', role, min: 0, max: 4, limit: 1000 })),
        // Nothing times out while the test runs.
        timing: { heartbeatMs: 1000, nodeTimeout: '1h', streamTimeout: '1h', publishTimeout: '1h' },
      },
    ],
  };
}

/** A metric's value as the service reports it now (undefined if it does not report it). */
function metric(text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `) || (labels === '' && l.startsWith(`${name}{`) === false && l.startsWith(`${name} `)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

type Kind = 'publish' | 'transcode';
const path = (kind: Kind, stream: string) => (kind === 'publish' ? `/as/v1/streams/live/${stream}/publish` : `/as/v1/streams/stream/g/${stream}?transcode=true`);

/** What a request ended with: its answer, or cut off by the kill. */
function settle(p: Promise<Reply>): { done: boolean; reply: Reply | null } & { promise: Promise<void> } {
  const out = { done: false, reply: null as Reply | null, promise: Promise.resolve() };
  out.promise = p.then(
    (r) => {
      out.reply = r;
      out.done = true;
    },
    () => {
      out.done = true;
    },
  );
  return out;
}

async function scenario(t: ExecutionContext, durability: 'commit' | 'flush', first: 'publish' | 'transcode' | 'heartbeat', second: Kind) {
  const own = await OwnService.start(t, config(durability), { SWITCHYARD_JWT_SECRET: SECRET });
  let token = await own.login();
  const signer = new TokenSigner(Buffer.from(SECRET));
  const get = (p: string) => request(own.url, 'GET', p, undefined, { authorization: `Bearer ${token}` });
  const beat = (id: string, streams: unknown[] = []) =>
    request(own.url, 'POST', `/as/v1/nodes/${id}/events`, { ready: true, metrics: {}, streams }, { authorization: `Bearer ${signer.nodeToken('g', id, 3_600_000)}` });
  for (const id of ['o1', 'o2', 't1', 'e1']) t.is((await beat(id)).status, 200);
  // One record of each shape the held commit writes, so that lmdb-js has its structure already
  // (see holdWrites); the provision's answer is acknowledged, so every write before it is in.
  t.is((await get('/as/v1/streams/live/warm/publish')).status, 200);
  t.is((await request(own.url, 'POST', '/as/v1/provision/g', ladder('warmt'), { authorization: `Bearer ${token}` })).status, 201);
  t.is((await get('/as/v1/streams/stream/g/warmt?transcode=true')).status, 200);
  // A binding an origin made by listing a stream (LIVE, with no one who asked for it): its shape too.
  t.is((await beat('o1', [{ name: 'warmhb', publishing: true }])).status, 200);
  t.is((await request(own.url, 'POST', '/as/v1/provision/g', ladder('cam'), { authorization: `Bearer ${token}` })).status, 201);
  const metrics = async () => (await request(own.url, 'GET', '/as/v1/metrics')).text;
  const bindings = async () => {
    const text = await metrics();
    return (metric(text, 'switchyard_bindings', '{group="g",state="PENDING"}') ?? 0) + (metric(text, 'switchyard_bindings', '{group="g",state="LIVE"}') ?? 0);
  };
  const before = await bindings();

  const hold = holdWrites(own.dataDir);
  let released = false;
  t.teardown(() => (released ? undefined : hold.release()));
  // The first writes the binding of 'cam': a lookup that binds it, or an origin that lists it.
  let a: ReturnType<typeof settle> | null = null;
  if (first === 'heartbeat') t.is((await beat('o2', [{ name: 'cam', publishing: true }])).status, 200, 'heartbeat replies do not wait');
  else {
    a = settle(get(path(first, 'cam')));
    // Decided: the actor's memory holds the binding (its commit is held).
    for (let i = 0; i < 2000 && (await bindings()) === before; i++);
    t.is(await bindings(), before + 1);
  }
  const waitingBefore = metric(await metrics(), 'switchyard_answers_waiting_for_store', '{group="g"}');
  const b = settle(get(path(second, 'cam')));
  // The second lookup has been decided: it answered (the old code), or it waits for the first's commit.
  for (let i = 0; i < 2000 && !b.done; i++) {
    const waiting = metric(await metrics(), 'switchyard_answers_waiting_for_store', '{group="g"}');
    if (waiting !== undefined && waitingBefore !== undefined && waiting > waitingBefore) break;
  }
  t.log(`before the kill: first ${a ? (a.done ? a.reply?.status : 'waiting') : 'heartbeat'}, second ${b.done ? b.reply?.status : 'waiting'}`);

  own.process.proc.kill('SIGKILL');
  await own.process.exited;
  await Promise.all([a?.promise, b.promise]);
  released = true;
  await hold.release();

  await own.spawn();
  token = await own.login();
  const streams = (await get('/as/v1/streams?nodeGroup=g')).json as Array<{ name: string; origin: { nodeId: string }; transcoder?: { nodeId: string } }>;
  const cam = streams.find((s) => s.name === 'cam');
  for (const [name, r] of [
    ['first', a],
    ['second', b],
  ] as const) {
    const reply = r?.reply;
    if (reply?.status !== 200) continue;
    const node = (reply.json as { nodeId: string }).nodeId;
    // An answer that named a node for 'cam' told its client that 'cam' is bound there: still so.
    t.truthy(cam, `the ${name} lookup answered ${node} for 'cam', and after the crash 'cam' is not bound at all`);
    if (cam) t.true(node === cam.origin.nodeId || node === cam.transcoder?.nodeId, `the ${name} lookup answered ${node}; stored: ${JSON.stringify(cam)}`);
  }
}

test("two publish lookups of one new stream: the second answers only once the first one's binding is committed", (t) => scenario(t, 'commit', 'publish', 'publish'));
test('the same with durability "flush"', (t) => scenario(t, 'flush', 'publish', 'publish'));
test('two transcode lookups of one new stream: the same', (t) => scenario(t, 'commit', 'transcode', 'transcode'));
test("a binding an origin's heartbeat made (published without asking): a publish lookup that finds it waits for its commit", (t) => scenario(t, 'commit', 'heartbeat', 'publish'));
