// Events across a takeover (docs/cluster.md), on a real 3-server NATS cluster: an owner's commits carry
// their events in the group's log; the owner dies having published the events of only the first
// of three commits; the next owner, once fenced, hands out the events of all three again, and the
// event stream holds each event once, in commit order, even when the dead owner's late
// publication of the second arrives after the new owner's.
import test from 'ava';
import { pino } from 'pino';
import type { EventBody } from '../../src/domain/events.js';
import { ClusterEventLog } from '../../src/cluster/events.js';
import { connectNats, jet, provision, retrying, STREAMS } from '../../src/cluster/nats.js';
import { GroupLog } from '../../src/cluster/wal.js';
import { openStore } from '../../src/store/store.js';
import { tempDir } from '../helpers/fixtures.js';
import { NatsCluster } from '../helpers/nats-cluster.js';
import { until } from '../helpers/until.js';

const SETTINGS = { entries: 10_000, intervalMs: 3_600_000 };
const bound = (stream: string): EventBody => ({ type: 'stream.bound', group: 'g', stream, origin: 'o1' });

test("a new owner hands out its predecessor's last commits' events again; the stream keeps each once, in commit order", async (t) => {
  const nats = await NatsCluster.start(3);
  t.teardown(() => nats.stop());
  const j = await jet(await connectNats(nats.urls(), 'event-republish-test'));
  t.teardown(() => j.nc.close());
  await retrying(() => provision(j, 3, 2000), Date.now() + 20_000);
  const silent = pino({ level: 'silent' });

  // The first owner: three commits, each a write and two events; only the first commit's events published.
  const first = await GroupLog.open(nats.urls(), 'g', 'a', 1, SETTINGS);
  t.teardown(() => first.close());
  await first.fence(openStore(tempDir('switchyard-republish-a-')));
  const commits = [
    [bound('s1'), bound('s1b')],
    [bound('s2'), bound('s2b')],
    [bound('s3'), bound('s3b')],
  ];
  const keys: string[] = [];
  for (const [i, events] of commits.entries()) {
    const at = await first.append([{ kind: 'binding', key: `s${i + 1}`, value: null }], events);
    keys.push(`g.${at.seq}.${at.index}`);
  }
  const deadOwnersLog = new ClusterEventLog(j, 'a', silent);
  deadOwnersLog.append(commits[0]!, keys[0]);
  await until(() => deadOwnersLog.waiting === 0, 10_000, "the first commit's events logged");

  // The next owner: fenced, it reads the three commits' events back, keyed as the first owner keyed them.
  const next = await GroupLog.open(nats.urls(), 'g', 'b', 2, SETTINGS);
  t.teardown(() => next.close());
  await next.fence(openStore(tempDir('switchyard-republish-b-')));
  const again = await next.eventsBeforeFence();
  t.deepEqual(
    again.map((b) => b.key),
    keys,
  );
  t.deepEqual(
    again.map((b) => b.events),
    commits,
  );
  const nextOwnersLog = new ClusterEventLog(j, 'b', silent);
  const releasedHere: string[] = [];
  nextOwnersLog.subscribeLocal((e) => releasedHere.push((e as { stream: string }).stream));
  for (const b of again) nextOwnersLog.append(b.events, b.key);
  await until(() => nextOwnersLog.waiting === 0, 10_000, 'the events handed out again are logged');
  // The first owner was only slow: its publication of the second commit's events comes last.
  deadOwnersLog.append(commits[1]!, keys[1]);
  await until(() => deadOwnersLog.waiting === 0, 10_000, 'the late publication answered');

  const info = await j.jsm.streams.info(STREAMS.events);
  const logged: string[] = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq; seq++) {
    const m = await j.jsm.streams.getMessage(STREAMS.events, { seq });
    if (m) logged.push((m.json() as { stream: string }).stream);
  }
  t.deepEqual(logged, ['s1', 's1b', 's2', 's2b', 's3', 's3b']);
  t.deepEqual(releasedHere, ['s2', 's2b', 's3', 's3b'], 'what the stream already held is not acted on again here');
});
