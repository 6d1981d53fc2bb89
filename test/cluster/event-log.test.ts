// The cluster's event log (docs/cluster.md), on a real 3-server NATS cluster and 3 real instances:
// a client resuming from 0 on any instance gets everything the stream holds (more than 1,000
// events), in pages, with no gap and no duplicate; and every instance's event stream keeps up
// while the NATS server leading the stream is killed again and again (its follower once stopped
// for good after such a kill, silently), and loses no event written meanwhile (9 of 1,924
// provisions had none when an event the stream did not take during its election was dropped).
import test from 'ava';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { openEventFrames } from '../../src/events/stream-client.js';
import { staticGroup } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { Cluster, clusterConfig, metricOf, type Instance } from '../helpers/cluster.js';
import { until } from '../helpers/until.js';
import { waitForEvents } from '../helpers/events.js';
import type { EventRecord } from '../../src/domain/events.js';

const ladder = (streamName: string) => ({
  streamName,
  region: 'r1',
  streams: [{ name: `${streamName}_360`, level: 1, videoBR: 800000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64000 }],
});

/** Every event id an instance's stream carries, from 0, for as long as the test runs. */
class Reader {
  readonly ids: number[] = [];
  ended: string | null = null;
  private readonly controller = new AbortController();

  constructor(
    readonly instance: Instance,
    token: string,
  ) {
    void (async () => {
      try {
        for await (const f of await openEventFrames(instance.url, token, { since: 0, signal: this.controller.signal })) if (f.id !== undefined) this.ids.push(f.id);
        this.ended = 'the stream ended';
      } catch (err) {
        if (!this.controller.signal.aborted) this.ended = (err as Error).message;
      }
    })();
  }

  get last(): number {
    return this.ids.at(-1) ?? 0;
  }

  /** Where its ids skip or repeat one (the first few). */
  breaks(): string[] {
    const out: string[] = [];
    for (let i = 1; i < this.ids.length && out.length < 5; i++) if (this.ids[i] !== this.ids[i - 1]! + 1) out.push(`${this.ids[i - 1]} → ${this.ids[i]}`);
    return out;
  }

  stop(): void {
    this.controller.abort();
  }
}

test('every instance replays all the stream holds and keeps up while the stream leader is killed', async (t) => {
  const c = await Cluster.start(t, clusterConfig([staticGroup({ name: 'g' })]));
  await c.ready();
  const token = await c.login(c.instances[0]!);
  const auth = { authorization: `Bearer ${token}` };
  const nc = await connect({ servers: c.nats.urls(), maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc, { timeout: 2000 });
  const streamLast = async () => (await jsm.streams.info('SY_EVENTS')).state.last_seq;

  let n = 0;
  /** The provisions answered 201: each has its event in the log. */
  const created = new Set<string>();
  /** Provisions made through every instance in turn (each one event), `count` of them, retrying what NATS refused. */
  const write = async (count: number) => {
    let made = 0;
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (made < count) {
          made++;
          const i = c.instances[n % 3]!;
          const name = `s${n++}`;
          for (let tries = 0; tries < 40; tries++) {
            const r = await request(i.url, 'POST', '/as/v1/provision/g', ladder(name), auth).catch(() => null);
            if (r?.status === 201) {
              created.add(name);
              break;
            }
            await new Promise((r) => setTimeout(r, 250));
          }
        }
      }),
    );
  };

  const readers = c.instances.map((i) => new Reader(i, token));
  t.teardown(() => {
    for (const r of readers) r.stop();
  });
  const keptUp = async (what: string) => {
    const target = await streamLast();
    for (const r of readers) await until(() => r.ended !== null || r.last >= target, 60_000, `${r.instance.id}'s event stream at ${target} ${what} (at ${r.last})`);
    for (const r of readers) {
      t.is(r.ended, null, `${r.instance.id}'s stream ended`);
      t.deepEqual(r.breaks(), [], `${r.instance.id}: ids skip or repeat ${what}`);
    }
    return target;
  };

  // More than a page and more than the 1,000 a replay once stopped at.
  await write(1100);
  const target = await keptUp('after 1,100 provisions');
  t.true(target > 1100);

  // A client resuming from 0 on any instance: everything from the stream's first event.
  const first = (await jsm.streams.info('SY_EVENTS')).state.first_seq;
  for (const i of c.instances) {
    const replay = new Reader(i, token);
    await until(() => replay.ended !== null || replay.last >= target, 30_000, `a replay from 0 on ${i.id} reaching ${target} (at ${replay.last})`);
    replay.stop();
    t.is(replay.ids[0], first, `${i.id}: from the first event`);
    t.deepEqual(replay.breaks(), [], `${i.id}: the replay skips or repeats`);
    t.true(replay.ids.length >= target - first + 1, `${i.id}: ${replay.ids.length} replayed`);
  }

  // The stream's leader killed three times, with events written throughout.
  let writing = true;
  const writer = (async () => {
    while (writing) await write(10);
  })();
  for (let round = 1; round <= 3; round++) {
    const leader = await c.nats.leaderOf('SY_EVENTS');
    t.truthy(leader, 'a leader of SY_EVENTS');
    await c.nats.kill(leader!);
    // Events written while it is down (and elected anew).
    const at = n;
    await until(() => n >= at + 50, 60_000, 'provisions written after the kill');
    await c.nats.restart(leader!);
    await until(() => c.nats.whole(), 60_000, `${leader!.name} current again`);
    t.log(`round ${round}: ${leader!.name} killed and back; readers at ${readers.map((r) => r.last).join(', ')}`);
  }
  writing = false;
  await writer;
  await write(20);
  await keptUp('after three kills of the stream leader');
  // Every provision answered 201 has its event in the log, once, though the stream took no
  // writes while each kill's election ran (the group's log, another stream, went on).
  let seen: readonly EventRecord[] = [];
  const logged = (s: readonly EventRecord[]) => s.filter((e) => e.type === 'provision.changed' && e.change === 'created').map((e) => (e as { stream: string }).stream);
  await waitForEvents(c.instances[0]!.url, token, (s) => logged((seen = s)).filter((name) => created.has(name)).length >= created.size, { timeoutMs: 30_000 }).catch(() => {});
  const missing = [...created].filter((name) => !logged(seen).includes(name));
  t.deepEqual(missing.slice(0, 10), [], `${missing.length} of ${created.size} provisions answered 201 have no event in the log`);
  const twice = logged(seen).filter((name, i, all) => all.indexOf(name) !== i);
  t.deepEqual(twice.slice(0, 10), [], 'provisions logged twice');
  const restarts = await Promise.all(c.instances.map((i) => metricOf(i, 'switchyard_cluster_event_follower_restarts_total')));
  t.log(`followers made again (per instance): ${restarts.join(', ')}`);
  t.true(restarts.every(Number.isFinite));
});
