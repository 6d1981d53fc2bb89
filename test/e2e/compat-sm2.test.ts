// Red5 Pro Stream Manager 2.0's client flows against the shipped default config (local nodes,
// simulated media), the service as its own program with SWITCHYARD_COMPAT_RED5SM2=on: the load-
// testing bees, an ABR publisher and its viewers, and the Terraform installer creating a node
// group, waiting for its nodes to come into service, and deleting it
// (docs/migrating-from-red5-sm2.md).
import { readFileSync } from 'node:fs';
import test, { type ExecutionContext } from 'ava';
import { DEFAULT_CONFIG_FILE } from '../../src/config/load.js';
import type { EventRecord } from '../../src/domain/events.js';
import { inService, waitForEvents } from '../helpers/events.js';
import { body, request } from '../helpers/http.js';
import { E2E_PASSWORD, OwnService } from '../helpers/process.js';

type Location = { streamGuid: string; serverAddress: string; nodeRole: string; subGroup: string; nodeState: string; token?: string };
const basic = `Basic ${Buffer.from(`admin:${E2E_PASSWORD}`).toString('base64')}`;

async function start(t: ExecutionContext) {
  const config = JSON.parse(readFileSync(DEFAULT_CONFIG_FILE, 'utf8')) as {
    server: Record<string, unknown>;
    nodeGroups: Array<{ platform: { local: Record<string, unknown> }; timing: Record<string, unknown> }>;
    compat?: unknown;
  };
  config.server.port = 0;
  config.nodeGroups[0]!.platform.local.firstAddress = '127.0.40.2';
  config.nodeGroups[0]!.timing.heartbeatMs = 300;
  // What a team moving off SM2 adds: anonymous lookups, and where groups its installer creates run.
  config.compat = { red5sm2: { anonymousLookups: true, platform: { type: 'local', local: { firstAddress: '127.0.41.2' } } } };
  const svc = await OwnService.start(t, config, { SWITCHYARD_COMPAT_RED5SM2: 'on' });
  const admin = await svc.login();
  await waitForEvents(svc.url, admin, (seen) => inService(seen).size >= 5);
  // Where each node's media listener is (an SM2 client has it in its own settings: the bees' rtmp_port).
  const detail = body<{ nodeList: Array<{ address: string; listeners: { publish?: { port: number }; subscribe?: { port: number } } }> }>(
    await request(svc.url, 'GET', '/as/v1/nodegroups/default', undefined, { authorization: `Bearer ${admin}` }),
  );
  const portOf = (address: string) => {
    const n = detail.nodeList.find((x) => x.address === address)!;
    return (n.listeners.publish ?? n.listeners.subscribe)!.port;
  };
  return { svc, admin, portOf };
}

test("the bees and an ABR publisher: lookups without a token, sessions on the nodes they name, viewers of a variant under the stream's origin", async (t) => {
  const { svc, admin, portOf } = await start(t);
  const anonymous = async (path: string) => {
    const r = await request(svc.url, 'GET', path);
    t.is(r.status, 200, `${path}: ${r.text}`);
    return r.json as Location[];
  };
  // The default group admits only clients with a lookup's token: each location carries one, which
  // a client moving off SM2 passes on (docs/migrating-from-red5-sm2.md); none, and the node refuses.
  const session = async (l: Location, kind: 'publish' | 'subscribe', name = l.streamGuid.split('/').pop()!) => {
    const node = `http://${l.serverAddress}:${portOf(l.serverAddress)}`;
    t.is((await request(node, 'POST', `/live/${name}/${kind}`)).status, 403, 'without the token');
    return (await request(node, 'POST', `/live/${name}/${kind}?token=${l.token}`)).status;
  };
  const live = (stream: string, since: number) => waitForEvents(svc.url, admin, (seen) => seen.some((e) => e.type === 'stream.live' && e.stream === stream), { since });
  const last = async () => (await waitForEvents(svc.url, admin, () => true)).at(-1)?.seq ?? 0;

  // rtmpbee-publisher-sm.sh, then ffmpeg to rtmp://$origin:$port/live/$name.
  const from = await last();
  const [origin] = await anonymous('/as/v1/streams/stream/default/publish/live/bee_rtmp_1_1?strict=false&transcode=false&endpoints=1');
  t.is(origin!.nodeRole, 'origin');
  t.is(await session(origin!, 'publish'), 201);
  await live('bee_rtmp_1_1', from);
  // rtspbee-subscriber-sm.sh, then ffmpeg from the edge.
  const [edge] = await anonymous('/as/v1/streams/stream/default/subscribe/live/bee_rtmp_1_1?strict=false&endpoints=1');
  t.is(edge!.nodeRole, 'edge');
  t.is(await session(edge!, 'subscribe'), 201);
  t.deepEqual(
    (await anonymous('/as/v1/streams/stream/default/stream/live/bee_rtmp_1_1?aggregate=true')).map((l) => l.serverAddress),
    [origin!.serverAddress],
  );

  // An ABR publisher (Android testbed): a token by Basic credentials, the ladder, the transcoder.
  const token = body<{ token: string }>(await request(svc.url, 'PUT', '/as/v1/auth/login', undefined, { authorization: basic, 'content-length': '0' })).token;
  const ladder = [1, 2].map((level) => ({ streamGuid: `live/show_${level}`, abrLevel: level, videoParams: { videoWidth: 1280 / level, videoHeight: 720 / level, videoBitRate: 2_000_000 / level } }));
  t.is(
    (await request(svc.url, 'POST', '/as/v1/streams/provision/default', [{ streamGuid: 'live/show', messageType: 'ProvisionCommand', streams: ladder }], { authorization: `Bearer ${token}` })).status,
    201,
  );
  const abr = await anonymous('/as/v1/streams/stream/default/publish/live/show?transcode=true');
  t.deepEqual(
    abr.map((l) => l.nodeRole),
    ['transcoder', 'origin'],
  );
  // The publisher sends the stream the answer names to the transcoder; the renditions reach the origin.
  const before = await last();
  t.is(await session(abr[0]!, 'publish'), 201);
  await live('show', before);
  // A viewer of a variant gets an edge under that origin.
  const [viewer] = await anonymous('/as/v1/streams/stream/default/subscribe/live/show_2');
  t.is(viewer!.streamGuid, 'live/show_2');
  const nodes = body<{ nodeList: Array<{ address: string; parent: string | null; id: string }> }>(
    await request(svc.url, 'GET', '/as/v1/nodegroups/default', undefined, { authorization: `Bearer ${admin}` }),
  ).nodeList;
  const originId = nodes.find((n) => n.address === abr[1]!.serverAddress)!.id;
  t.is(nodes.find((n) => n.address === viewer!.serverAddress)?.parent, originId);
  t.is(await session(viewer!, 'subscribe'), 201);
  // Both streams are listed as the HTML5 testbed lists them.
  const listed = (await anonymous('/as/v1/streams/stream/default?stats=true&aggregate=true')).map((l) => l.streamGuid);
  t.true(listed.includes('live/bee_rtmp_1_1') && listed.includes('live/show'), listed.join(' '));
});

test('the Terraform installer: health, a token, a NodeGroupConfig created (200), its nodes polled until INSERVICE, then every group listed and deleted (200)', async (t) => {
  const { svc, admin } = await start(t);
  t.is((await request(svc.url, 'GET', '/as/v1/admin/healthz')).status, 200);
  // r5p_create_node_group.sh: curl -X PUT …/auth/login -H 'Authorization: Basic …', then jq .token.
  const token = body<{ token: string }>(await request(svc.url, 'PUT', '/as/v1/auth/login', undefined, { accept: 'application/json', authorization: basic })).token;
  const auth = { authorization: `Bearer ${token}` };
  const rule = (role: string, min: string, max: string) => ({
    nodeGroupName: 'ng-oe',
    subGroupName: 'us-east-1',
    nodeRoleName: role,
    min,
    max,
    increment: 1,
    outExpression: 'avg(cpu.usage) > 55.0',
    inExpression: 'avg(cpu.usage) < 20.0',
    capacityRankingExpression: 'cpu.usage',
    capacityLimitExpression: '90.0',
  });
  const config = {
    name: 'ng-oe',
    description: 'Stream Manager 2.0 Node group with Origin, Edge in AWS cloud platform',
    cloudProperties: 'environment=e2e;vpc=vpc-e2e;security_group=sg-e2e',
    cloudPlatform: 'AWS',
    isScalingPaused: false,
    internalVersionCount: 0,
    shuffleSizeExpression: 'nodeCount*0.5',
    images: { origin_image: { name: 'origin_image', image: 'red5pro-node', cloudProperties: 'instance_type=c5.large;volume_size=16' } },
    roles: {
      origin: { name: 'origin', imageName: 'origin_image', capabilities: ['PUBLISH'], propertyOverrides: [] },
      edge: { name: 'edge', imageName: 'origin_image', parentRoleName: 'origin', parentCardinality: 'GLOBAL', capabilities: ['SUBSCRIBE'], propertyOverrides: [] },
    },
    groups: {
      'us-east-1': {
        nodeGroupName: 'ng-oe',
        subGroupName: 'us-east-1',
        groupType: 'main',
        cloudProperties: 'region=us-east-1',
        rulesByRole: { origin: rule('origin', '1', '20'), edge: rule('edge', '1', '40') },
      },
    },
  };
  const from = (await waitForEvents(svc.url, admin, () => true)).at(-1)!.seq;
  const created = await request(svc.url, 'POST', '/as/v1/admin/nodegroup', config, auth);
  t.is(created.status, 200, created.text);

  // check_node_group: until every required node is INSERVICE (here: watched on the event stream, then read once as the installer reads it).
  const up = await waitForEvents(
    svc.url,
    admin,
    // An origin and an edge: its rules may fire a scale-out (they read cpu.usage, the host's load
    // average, high on a busy machine), so counting nodes is not enough.
    (seen) =>
      new Set([...inService(seen)].flatMap((id) => seen.filter((e: EventRecord) => e.type === 'node.state' && e.nodeId === id && e.group === 'ng-oe').map((e) => (e as { role: string }).role)))
        .size === 2,
    { since: from },
  );
  t.true(up.length > 0);
  const status = body<Array<{ nodeEvent: { publicIp: string; privateIp: string }; scalingEvent: { nodeId: string; nodeRoleName: string; state: string } }>>(
    await request(svc.url, 'GET', '/as/v1/admin/nodegroup/status/ng-oe', undefined, auth),
  );
  const ready = status.filter((n) => n.scalingEvent.state === 'INSERVICE');
  t.deepEqual([...new Set(ready.map((n) => n.scalingEvent.nodeRoleName))].sort(), ['edge', 'origin']);
  t.true(
    ready.every((n) => /^127\.0\.41\.\d+$/.test(n.nodeEvent.publicIp) && n.nodeEvent.privateIp === n.nodeEvent.publicIp),
    'on compat.red5sm2.platform',
  );
  t.is(body<{ name: string }>(await request(svc.url, 'GET', '/as/v1/admin/nodegroup/ng-oe', undefined, auth)).name, 'ng-oe');

  // r5p_delete_node_group.sh: every name of GET …/admin/nodegroup, each DELETE answered 200.
  const names = body<string[]>(await request(svc.url, 'GET', '/as/v1/admin/nodegroup', undefined, auth));
  t.deepEqual(names, ['default', 'ng-oe']);
  const deleted = await request(svc.url, 'DELETE', '/as/v1/admin/nodegroup/ng-oe', undefined, auth);
  t.is(deleted.status, 200, deleted.text);
  t.deepEqual(body<string[]>(await request(svc.url, 'GET', '/as/v1/admin/nodegroup', undefined, auth)), ['default']);
  await waitForEvents(svc.url, admin, (seen) => seen.some((e) => e.type === 'nodegroup.changed' && e.group === 'ng-oe' && e.change === 'deleted'), { since: from });
  t.is((await request(svc.url, 'GET', '/as/v1/admin/nodegroup/status/ng-oe', undefined, auth)).status, 404);
});
