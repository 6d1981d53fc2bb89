// Red5 Pro Stream Manager 2.0's clients, replayed against a started service with the layer on:
// each request as the client sends it (method, headers, body shape, query), each answer read as
// the client reads it (docs/migrating-from-red5-sm2.md lists the clients). The static fleet is
// played by fake node agents over the real heartbeat protocol.
import { request as httpRequest } from 'node:http';
import anyTest, { type TestFn } from 'ava';
import { hash } from '../../src/auth/scrypt-task.js';
import { isProblem } from '../helpers/assert.js';
import { allInService, type FakeNode } from '../helpers/fake-node.js';
import { rawRequest, replyOf, request, type Reply } from '../helpers/http.js';
import { ADMIN_PASSWORD, staticGroup, startTestService, type TestService } from '../helpers/service.js';

/** The fake nodes beat when a test says so: none may go silent (FAULT) however slowly the test runs. */
/** Room for every lookup of the tests, which run at once: none is refused for want of it. */
const ROOMY = ['r1', 'r2'].flatMap((region) => ['origin', 'edge', 'transcoder'].map((role) => ({ region, role, min: 0, max: 4, limit: 1000 })));

const test = anyTest as TestFn<{ svc: TestService; nodes: Map<string, FakeNode> }>;

const NODES = [
  { id: 'o1', role: 'origin', region: 'r1' },
  { id: 'o2', role: 'origin', region: 'r2' },
  { id: 'e1', role: 'edge', region: 'r1' },
  { id: 'e2', role: 'edge', region: 'r2' },
  { id: 't1', role: 'transcoder', region: 'r1' },
];
const ADDRESS: Record<string, string> = Object.fromEntries(NODES.map((n, i) => [n.id, `10.0.0.${i + 1}`]));
const addressOf = (id: string): string => ADDRESS[id]!;
const appUser = { username: 'backend', role: 'app', passwordHash: hash('app-secret-password') };
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
// SM2's fields, and Switchyard's admission additions (docs/migrating-from-red5-sm2.md): the URL with its token.
const LOCATION_KEYS = ['nodeRole', 'nodeState', 'serverAddress', 'streamGuid', 'subGroup', 'token', 'url'];

test.before(async (t) => {
  const svc = await startTestService({
    groups: [staticGroup({ name: 'default', regions: ['r1', 'r2'], nodes: NODES, rules: ROOMY })],
    config: { defaultNodeGroup: 'default', auth: { users: [appUser] }, compat: { red5sm2: { enabled: true, anonymousLookups: true } } },
  });
  t.context = {
    svc,
    nodes: await allInService(
      svc,
      'default',
      NODES.map((n) => n.id),
    ),
  };
});

test.after.always(async (t) => {
  await t.context.svc?.close();
});

/** A request exactly as given (headers, no body or an empty chunked one), through node:http. */
function send(svc: TestService, method: string, path: string, headers: Record<string, string>, chunkedEmptyBody = false): Promise<Reply> {
  const url = new URL(svc.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, method, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve(replyOf(res.statusCode ?? 0, new Headers(Object.entries(res.headers).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)] as [string, string]]))), text)));
    });
    req.on('error', reject);
    if (chunkedEmptyBody) req.flushHeaders();
    req.end();
  });
}

const anonymous = (svc: TestService, path: string) => request(svc.url, 'GET', path);
const sm2Login = async (svc: TestService, user = 'admin', password = ADMIN_PASSWORD) =>
  (await send(svc, 'PUT', '/as/v1/auth/login', { authorization: basic(user, password), 'content-length': '0' })).json as { token: string };

test("login: PUT /auth/login with Basic credentials and no body answers {token}, which works on SM2's paths and on ours", async (t) => {
  const { svc } = t.context;
  // Terraform installer: curl -X PUT -H 'Authorization: Basic …' -H 'Content-Length: 0'.
  const curl = await send(svc, 'PUT', '/as/v1/auth/login', { accept: 'application/json', authorization: basic('admin', ADMIN_PASSWORD), 'content-length': '0' });
  t.is(curl.status, 200, curl.text);
  t.deepEqual(Object.keys(curl.json as object), ['token']);
  const token = (curl.json as { token: string }).token;
  // HTML5 testbed: fetch PUT with Content-Type: application/json and no body.
  t.is((await send(svc, 'PUT', '/as/v1/auth/login', { authorization: basic('admin', ADMIN_PASSWORD), 'content-type': 'application/json', 'content-length': '0' })).status, 200);
  // Android testbed: HttpURLConnection PUT in chunked mode, an empty body.
  const android = await send(
    svc,
    'PUT',
    '/as/v1/auth/login',
    { authorization: basic('admin', ADMIN_PASSWORD), 'content-type': 'application/json', accept: 'application/json', 'transfer-encoding': 'chunked' },
    true,
  );
  t.is(android.status, 200, android.text);
  // The token on SM2's admin API and on ours.
  t.deepEqual((await request(svc.url, 'GET', '/as/v1/admin/nodegroup', undefined, { authorization: `Bearer ${token}` })).json, ['default']);
  t.is((await svc.get('/as/v1/nodegroups', token)).status, 200);

  // An app user's token looks streams up and is refused admin calls, as ours are.
  const app = (await sm2Login(svc, 'backend', 'app-secret-password')).token;
  t.is((await request(svc.url, 'GET', '/as/v1/streams/stream/default/publish/live/by-app', undefined, { authorization: `Bearer ${app}` })).status, 200);
  isProblem(t, await request(svc.url, 'GET', '/as/v1/admin/nodegroup', undefined, { authorization: `Bearer ${app}` }), 403, 'FORBIDDEN');

  // Wrong, missing and malformed credentials: 401 with `error` and `errorMessage` (clients show either).
  const wrong = isProblem(t, await send(svc, 'PUT', '/as/v1/auth/login', { authorization: basic('admin', 'not-the-password'), 'content-length': '0' }), 401, 'INVALID_CREDENTIALS');
  t.regex(wrong.errorMessage, /wrong user name or password/);
  isProblem(t, await send(svc, 'PUT', '/as/v1/auth/login', { 'content-length': '0' }), 401, 'INVALID_CREDENTIALS');
  isProblem(t, await send(svc, 'PUT', '/as/v1/auth/login', { authorization: 'Basic not*base64', 'content-length': '0' }), 401, 'INVALID_CREDENTIALS');
  isProblem(t, await send(svc, 'PUT', '/as/v1/auth/login', { authorization: basic('admin', ''), 'content-length': '0' }), 401, 'INVALID_CREDENTIALS');
});

test('load-testing bees and the HTML5 testbed: publish, find the origin, subscribe, list, by scope/name and without a token', async (t) => {
  const { svc, nodes } = t.context;
  // rtmpbee-publisher-sm.sh: …/publish/live/$name?strict=false&transcode=false&endpoints=1 | jq '.[0].serverAddress'
  const pub = await anonymous(svc, '/as/v1/streams/stream/default/publish/live/bee1?strict=false&transcode=false&endpoints=1');
  t.is(pub.status, 200, pub.text);
  const [origin] = pub.json as Array<Record<string, string>>;
  t.deepEqual(Object.keys(origin!).sort(), LOCATION_KEYS);
  t.is(origin!.streamGuid, 'live/bee1');
  t.is(origin!.nodeRole, 'origin');
  t.is(origin!.nodeState, 'INSERVICE');
  const originId = Object.keys(ADDRESS).find((id) => ADDRESS[id] === origin!.serverAddress)!;
  t.true(['o1', 'o2'].includes(originId));
  // The HTML5 testbed splits streamGuid into the scope and the name it publishes.
  const paths = origin!.streamGuid!.split('/');
  t.deepEqual([paths.slice(0, -1).join('/'), paths.at(-1)], ['live', 'bee1']);
  // A reconnecting publisher lands where it was; our own API sees the same binding.
  t.is(((await anonymous(svc, '/as/v1/streams/stream/default/publish/live/bee1')).json as Array<{ serverAddress: string }>)[0]!.serverAddress, origin!.serverAddress!);
  const ours = (await svc.get('/as/v1/streams?nodeGroup=default')).json as Array<{ name: string; origin: { nodeId: string } }>;
  t.is(ours.find((s) => s.name === 'bee1')?.origin.nodeId, originId);

  // The publisher connects: the origin reports the stream and it is live.
  await nodes.get(originId)!.beat({ publishers: 1, streams: [{ name: 'bee1', publishing: true }] });
  // red5pro-utils getOriginForStream: …/stream/live/bee1?aggregate=true → [0].serverAddress.
  const found = (await anonymous(svc, '/as/v1/streams/stream/default/stream/live/bee1?aggregate=true')).json as Array<{ serverAddress: string; nodeRole: string }>;
  t.deepEqual(
    found.map((l) => [l.nodeRole, l.serverAddress]),
    [['origin', origin!.serverAddress]],
  );

  // rtspbee-subscriber-sm.sh: …/subscribe/live/$name?strict=false&endpoints=1 | jq '.[0].serverAddress': an edge under that origin.
  const sub = await anonymous(svc, '/as/v1/streams/stream/default/subscribe/live/bee1?strict=false&endpoints=1');
  t.is(sub.status, 200, sub.text);
  const [edge] = sub.json as Array<Record<string, string>>;
  t.deepEqual(Object.keys(edge!).sort(), LOCATION_KEYS);
  t.is(edge!.nodeRole, 'edge');
  t.is(edge!.streamGuid, 'live/bee1');
  const edgeId = Object.keys(ADDRESS).find((id) => ADDRESS[id] === edge!.serverAddress)!;
  const detail = (await svc.get('/as/v1/nodegroups/default')).json as { nodeList: Array<{ id: string; parent: string | null }> };
  t.is(detail.nodeList.find((n) => n.id === edgeId)?.parent, originId);
  await nodes.get(edgeId)!.beat({ subscribers: 3, streams: [{ name: 'bee1', subscribers: 3 }] });

  // Listing with stats: the origin's stream and its viewers; the node-group names without a token.
  const list = (await anonymous(svc, '/as/v1/streams/stream/default?stats=true&aggregate=true')).json as Array<{ streamGuid: string; nodeRole: string; subscribers: number; durationMs: number }>;
  const bee = list.find((l) => l.streamGuid === 'live/bee1')!;
  t.is(bee.nodeRole, 'origin');
  t.is(bee.subscribers, 3);
  t.true(Number.isInteger(bee.durationMs) && bee.durationMs >= 0);
  t.false('subscribers' in ((await anonymous(svc, '/as/v1/streams/stream/default')).json as object[])[0]!, 'no stats unless asked');
  t.deepEqual((await anonymous(svc, '/as/v1/streams/stream/node-groups')).json, ['default']);

  // A room segment: live/room1/cam1 is our room1~cam1, and comes back as it went in.
  const room = ((await anonymous(svc, '/as/v1/streams/stream/default/publish/live/room1/cam1')).json as Array<{ streamGuid: string; serverAddress: string }>)[0]!;
  t.is(room.streamGuid, 'live/room1/cam1');
  const roomOrigin = Object.keys(ADDRESS).find((id) => ADDRESS[id] === room.serverAddress)!;
  t.true(((await svc.get('/as/v1/streams?nodeGroup=default')).json as Array<{ name: string }>).some((s) => s.name === 'room1~cam1'));
  await nodes.get(roomOrigin)!.beat({ publishers: 1, streams: [{ name: 'room1~cam1', publishing: true }] });
  t.is(((await anonymous(svc, '/as/v1/streams/stream/default/subscribe/live/room1/cam1')).json as Array<{ streamGuid: string }>)[0]!.streamGuid, 'live/room1/cam1');
  t.true(((await anonymous(svc, '/as/v1/streams/stream/default')).json as Array<{ streamGuid: string }>).some((l) => l.streamGuid === 'live/room1/cam1'));

  // subgroup (and the HTML5 testbed's region) put a region first; strict keeps to it.
  t.is(((await anonymous(svc, '/as/v1/streams/stream/default/publish/live/west?subgroup=r2&strict=true')).json as Array<{ subGroup: string }>)[0]!.subGroup, 'r2');
  t.is(((await anonymous(svc, '/as/v1/streams/stream/default/publish/live/west2?region=r2')).json as Array<{ subGroup: string }>)[0]!.subGroup, 'r2');
});

test("lookup errors are SM2's: 404 for an unknown group or stream, 400 for a scope or guid that does not fit, each with error and errorMessage", async (t) => {
  const { svc } = t.context;
  isProblem(t, await anonymous(svc, '/as/v1/streams/stream/default/subscribe/live/nobody'), 404, 'STREAM_NOT_FOUND');
  isProblem(t, await anonymous(svc, '/as/v1/streams/stream/nogroup/publish/live/cam1'), 404, 'NODE_GROUP_NOT_FOUND');
  isProblem(t, await anonymous(svc, '/as/v1/streams/stream/default/stream/live/never?aggregate=true'), 404, 'STREAM_NOT_FOUND');
  isProblem(t, await anonymous(svc, '/as/v1/streams/stream/default/publish/live/plain?transcode=true'), 404, 'PROVISION_NOT_FOUND');
  const scope = isProblem(t, await anonymous(svc, '/as/v1/streams/stream/default/publish/vod/cam1'), 400, 'VALIDATION_FAILED');
  t.deepEqual(
    scope.errors?.map((e) => e.path),
    ['path.scope'],
  );
  t.regex(scope.errorMessage, /scope 'live'/);
  // A `~` would make the mapping ambiguous (it joins a room to its stream); a dot-name could hide.
  isProblem(t, await anonymous(svc, '/as/v1/streams/stream/default/publish/live/a~b'), 400, 'VALIDATION_FAILED');
  const dot = await rawRequest(svc.url, { method: 'GET', path: '/as/v1/streams/stream/default/publish/live/.hidden/cam1', headers: {} });
  t.is(dot.status, 400);
  isProblem(t, await anonymous(svc, '/as/v1/streams/stream/default/publish/live/cam1?endpoints=0'), 400, 'VALIDATION_FAILED');
  isProblem(t, await anonymous(svc, '/as/v1/streams/stream/default/publish/live/cam1?endpoints=2&transcode=true'), 400, 'VALIDATION_FAILED');
  isProblem(t, await anonymous(svc, '/as/v1/streams/stream/default/publish/live/cam1?subgroup=mars'), 400, 'VALIDATION_FAILED');
  isProblem(t, await anonymous(svc, '/as/v1/streams/stream/default/subscribe/live/cam1?transcode=true'), 400, 'VALIDATION_FAILED');
  // More than one server asked for: the chosen one (clients read element 0).
  t.is(((await anonymous(svc, '/as/v1/streams/stream/default/publish/live/many?endpoints=3')).json as unknown[]).length, 1);
  // Our own routes carry errorMessage too (older clients read it wherever they are sent).
  const ours = isProblem(t, await svc.get('/as/v1/streams/live/nobody/subscribe?nodeGroup=default'), 404, 'STREAM_NOT_FOUND');
  t.is(ours.errorMessage, ours.detail);
});

test("provisions and ABR publishing: the HTML5, Android and iOS testbeds' bodies, 409 for a duplicate, the transcoder then its origin, viewers of a variant", async (t) => {
  const { svc, nodes } = t.context;
  const auth = { authorization: `Bearer ${(await sm2Login(svc)).token}` };
  const ladder = (guid: string) =>
    [3, 2, 1].map((level) => ({
      streamGuid: `${guid}_${level}`,
      abrLevel: level,
      videoParams: { videoWidth: Math.round(1280 / level), videoHeight: Math.round(720 / level), videoBitRate: Math.round(3_000_000 / level) },
    }));
  // HTML5 testbed (publishStreamManagerProxyTranscoderPOST): provisionGuid, messageType, credentials left out.
  const html5 = await request(svc.url, 'POST', '/as/v1/streams/provision/default', [{ provisionGuid: 'live/show', messageType: 'ProvisionCommand', streams: ladder('live/show') }], auth);
  t.is(html5.status, 201, html5.text);
  t.false('errorMessage' in (html5.json as object), 'the client reads a 2xx body with errorMessage as a failure');
  const again = isProblem(t, await request(svc.url, 'POST', '/as/v1/streams/provision/default', [{ provisionGuid: 'live/show', streams: ladder('live/show') }], auth), 409, 'PROVISION_EXISTS');
  t.regex(again.errorMessage, /Provision already exists/);
  // Android testbed (Gson of PublishTranscoderData): the guid in streamGuid, credentials, a chunked body.
  const android = JSON.stringify([{ streamGuid: 'live/droid', messageType: 'ProvisionCommand', credentials: { username: 'u', password: 'p' }, streams: ladder('live/droid') }]);
  const chunked = await new Promise<number>((resolve, reject) => {
    const url = new URL(svc.url);
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: 'POST',
        path: '/as/v1/streams/provision/default',
        headers: { ...auth, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
        agent: false,
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.write(android.slice(0, 40));
    req.end(android.slice(40));
  });
  t.is(chunked, 201);
  // iOS testbed: the guid in streamGuid, an explicit Content-Length (fetch sends one).
  t.is((await request(svc.url, 'POST', '/as/v1/streams/provision/default', [{ streamGuid: 'live/ios', messageType: 'ProvisionCommand', streams: ladder('live/ios') }], auth)).status, 201);

  // Read back as the Android subscriber test does: streams[].streamGuid.
  const read = (await request(svc.url, 'GET', '/as/v1/streams/provision/default/live/show', undefined, auth)).json as {
    provisionGuid: string;
    streams: Array<{ streamGuid: string; abrLevel: number; videoParams: { videoBitRate: number } }>;
  };
  t.is(read.provisionGuid, 'live/show');
  t.deepEqual(read.streams.map((v) => v.streamGuid).sort(), ['live/show_1', 'live/show_2', 'live/show_3']);
  t.is(read.streams.find((v) => v.abrLevel === 1)?.videoParams.videoBitRate, 3_000_000);
  const listed = (await request(svc.url, 'GET', '/as/v1/streams/provision/default', undefined, auth)).json as Array<{ provisionGuid: string }>;
  t.deepEqual(listed.map((p) => p.provisionGuid).sort(), ['live/droid', 'live/ios', 'live/show']);
  // Our own API has them as provisions of the guid's stream, in the group's first region.
  const ours = (await svc.get('/as/v1/provision/default/show')).json as { region: string; streams: Array<{ name: string; level: number }> };
  t.is(ours.region, 'r1');
  t.deepEqual(
    ours.streams.map((r) => [r.name, r.level]),
    [
      ['show_3', 3],
      ['show_2', 2],
      ['show_1', 1],
    ],
  );

  // Android: the transcoder by the provision's guid, no token: the transcoder first, then its origin.
  const byRoot = (await anonymous(svc, '/as/v1/streams/stream/default/publish/live/droid?transcode=true')).json as Array<{ streamGuid: string; nodeRole: string; serverAddress: string }>;
  t.deepEqual(
    byRoot.map((l) => l.nodeRole),
    ['transcoder', 'origin'],
  );
  t.is(byRoot[0]!.serverAddress, addressOf('t1'));
  t.true(byRoot.every((l) => l.streamGuid === 'live/droid'));
  const bound = ((await svc.get('/as/v1/streams?nodeGroup=default')).json as Array<{ name: string; origin: { serverAddress: string }; transcoder?: { nodeId: string } }>).find(
    (s) => s.name === 'droid',
  )!;
  t.is(bound.transcoder?.nodeId, 't1');
  t.is(bound.origin.serverAddress, byRoot[1]!.serverAddress);
  // iOS and SM2's docs: the transcoder by the best variant's guid; the answer names the stream to publish.
  const byVariant = (await anonymous(svc, '/as/v1/streams/stream/default/publish/live/ios_1?transcode=true')).json as Array<{ streamGuid: string; nodeRole: string }>;
  t.deepEqual(
    byVariant.map((l) => [l.nodeRole, l.streamGuid]),
    [
      ['transcoder', 'live/ios'],
      ['origin', 'live/ios'],
    ],
  );

  // The renditions reach the origin; a viewer of a variant gets an edge under it.
  const originId = Object.keys(ADDRESS).find((id) => ADDRESS[id] === byRoot[1]!.serverAddress)!;
  await nodes.get(originId)!.beat({ publishers: 3, streams: ['droid_1', 'droid_2', 'droid_3'].map((name) => ({ name, publishing: true })) });
  const viewer = (await anonymous(svc, '/as/v1/streams/stream/default/subscribe/live/droid_2')).json as Array<{ streamGuid: string; nodeRole: string; serverAddress: string }>;
  t.deepEqual([viewer[0]!.nodeRole, viewer[0]!.streamGuid], ['edge', 'live/droid_2']);
  const servers = (await anonymous(svc, '/as/v1/streams/stream/default/stream/live/droid_2?aggregate=false')).json as Array<{ nodeRole: string; serverAddress: string }>;
  t.deepEqual(
    servers.map((l) => [l.nodeRole, l.serverAddress]),
    [
      ['origin', byRoot[1]!.serverAddress],
      ['transcoder', ADDRESS.t1],
    ],
  );

  // Bad bodies: a guid outside the scope, a ladder that repeats a level; nothing is created.
  const scope = isProblem(t, await request(svc.url, 'POST', '/as/v1/streams/provision/default', [{ provisionGuid: 'vod/x', streams: ladder('live/x') }], auth), 400, 'VALIDATION_FAILED');
  t.deepEqual(
    scope.errors?.map((e) => e.path),
    ['body[0].provisionGuid'],
  );
  const level = isProblem(
    t,
    await request(
      svc.url,
      'POST',
      '/as/v1/streams/provision/default',
      [{ provisionGuid: 'live/y', streams: [...ladder('live/y'), { streamGuid: 'live/y_4', abrLevel: 1, videoParams: { videoWidth: 320, videoHeight: 180, videoBitrate: 300_000 } }] }],
      auth,
    ),
    400,
    'VALIDATION_FAILED',
  );
  t.deepEqual(
    level.errors?.map((e) => e.path),
    ['body[0].streams[3].abrLevel'],
  );
  // All or none: the second request's variant is the first's stream in use elsewhere; the first is not kept.
  const clash = await request(
    svc.url,
    'POST',
    '/as/v1/streams/provision/default',
    [
      { provisionGuid: 'live/z', streams: ladder('live/z') },
      { provisionGuid: 'live/w', streams: [{ streamGuid: 'live/show_1', abrLevel: 1, videoParams: { videoWidth: 640, videoHeight: 360, videoBitRate: 800_000 } }] },
    ],
    auth,
  );
  t.deepEqual(
    isProblem(t, clash, 400, 'VALIDATION_FAILED').errors?.map((e) => e.path),
    ['body[1].streams[0].streamGuid'],
  );
  isProblem(t, await request(svc.url, 'GET', '/as/v1/streams/provision/default/live/z', undefined, auth), 404, 'PROVISION_NOT_FOUND');
  isProblem(t, await request(svc.url, 'POST', '/as/v1/streams/provision/default', [{ provisionGuid: 'live/v', capabilities: ['PUBLISH'], streams: ladder('live/v') }], auth), 400, 'VALIDATION_FAILED');
  isProblem(t, await request(svc.url, 'POST', '/as/v1/streams/provision/default', [{ provisionGuid: 'live/v', streams: ladder('live/v') }]), 401, 'UNAUTHORIZED');

  // DELETE by guid (the HTML5 service encodes each segment), then it is gone.
  const deleted = await request(svc.url, 'DELETE', '/as/v1/streams/provision/default/live/show', undefined, auth);
  t.is(deleted.status, 200, deleted.text);
  isProblem(t, await request(svc.url, 'GET', '/as/v1/streams/provision/default/live/show', undefined, auth), 404, 'PROVISION_NOT_FOUND');
  isProblem(t, await request(svc.url, 'DELETE', '/as/v1/streams/provision/default/live/show', undefined, auth), 404, 'PROVISION_NOT_FOUND');
});

test("admin: health, node group names, config and per-node status as the Terraform installer and the HTML5 testbed read them; create from a NodeGroupConfig with SM2's paths in its errors", async (t) => {
  const { svc } = t.context;
  const auth = { authorization: `Bearer ${(await sm2Login(svc)).token}` };
  const admin = (method: string, path: string, body?: unknown) => request(svc.url, method, path, body, auth);
  t.is((await request(svc.url, 'GET', '/as/v1/admin/healthz')).status, 200, 'no token');
  t.is(((await admin('GET', '/as/v1/admin/nodegroup/default')).json as { name: string }).name, 'default');
  isProblem(t, await admin('GET', '/as/v1/admin/nodegroup/nogroup'), 404, 'NODE_GROUP_NOT_FOUND');

  // The installer's jq: .[] | [.scalingEvent.nodeId, .nodeEvent.publicIp, .nodeEvent.privateIp, .scalingEvent.nodeRoleName, .scalingEvent.state].
  const status = (await admin('GET', '/as/v1/admin/nodegroup/status/default')).json as Array<{
    nodeEvent: { nodeRoleName: string; publicIp: string; privateIp: string };
    scalingEvent: { nodeId: string; nodeRoleName: string; state: string };
  }>;
  t.deepEqual(
    status.map((n) => [n.scalingEvent.nodeId, n.nodeEvent.publicIp, n.nodeEvent.privateIp, n.scalingEvent.nodeRoleName, n.scalingEvent.state]).sort(),
    NODES.map((n) => [n.id, ADDRESS[n.id], ADDRESS[n.id], n.role, 'INSERVICE']).sort(),
  );
  // The HTML5 testbed's getAllEdges: filter nodeEvent.nodeRoleName edge, scalingEvent.state inservice, map nodeEvent.publicIp.
  const edges = ((await admin('GET', '/as/v1/admin/nodegroup/default/status')).json as typeof status)
    .filter((n) => n.scalingEvent.state.toLowerCase() === 'inservice' && n.nodeEvent.nodeRoleName.toLowerCase() === 'edge')
    .map((n) => n.nodeEvent.publicIp);
  t.deepEqual(edges.sort(), [ADDRESS.e1, ADDRESS.e2]);

  // Errors in a NodeGroupConfig are named where SM2's body has them.
  const rule = (extra: object = {}) => ({ nodeRoleName: 'edge', min: '0', max: '2', increment: 1, ...extra });
  const config = (
    name: string,
    edge: object,
    roles: object = { origin: { name: 'origin', capabilities: ['PUBLISH'] }, edge: { name: 'edge', parentRoleName: 'origin', capabilities: ['SUBSCRIBE'] } },
  ) => ({
    name,
    cloudPlatform: 'AWS',
    images: { edge_image: { name: 'edge_image', image: 'ami-1' } },
    roles,
    groups: {
      'us-east-1': {
        subGroupName: 'us-east-1',
        nodeGroupName: name,
        groupType: 'main',
        cloudProperties: 'region=us-east-1',
        rulesByRole: { origin: { nodeRoleName: 'origin', min: 0, max: 1 }, edge },
      },
    },
  });
  const badExpression = isProblem(t, await admin('POST', '/as/v1/admin/nodegroup', config('bad', rule({ outExpression: 'avg(connections.subscriber) >> 2' }))), 400, 'VALIDATION_FAILED');
  t.deepEqual(
    badExpression.errors?.map((e) => e.path),
    ['body.groups.us-east-1.rulesByRole.edge.outExpression'],
  );
  const badCount = isProblem(t, await admin('POST', '/as/v1/admin/nodegroup', config('bad', rule({ min: '3', max: '2' }))), 400, 'VALIDATION_FAILED');
  t.deepEqual(
    badCount.errors?.map((e) => e.path),
    ['body.groups.us-east-1.rulesByRole.edge.min'],
  );
  const mixer = isProblem(t, await admin('POST', '/as/v1/admin/nodegroup', config('bad', rule(), { origin: {}, mixer: { name: 'mixer', capabilities: ['MIX'] } })), 400, 'VALIDATION_FAILED');
  t.true(mixer.errors!.some((e) => e.path === 'body.roles.mixer'));
  isProblem(t, await admin('POST', '/as/v1/admin/nodegroup', { ...config('bad', rule()), cloudPlatfrom: 'AWS' }), 400, 'VALIDATION_FAILED');
  t.deepEqual((await admin('GET', '/as/v1/admin/nodegroup')).json, ['default'], 'nothing was created');
  isProblem(t, await admin('POST', '/as/v1/admin/nodegroup', config('default', rule())), 409, 'NODE_GROUP_EXISTS');
});

test("with the layer off, none of SM2's paths answer, and the OpenAPI document lists none", async (t) => {
  const svc = await startTestService({ groups: [staticGroup({ name: 'default', regions: ['r1'], nodes: [{ id: 'o1', role: 'origin', region: 'r1' }] })] });
  t.teardown(() => svc.close());
  isProblem(t, await send(svc, 'PUT', '/as/v1/auth/login', { authorization: basic('admin', ADMIN_PASSWORD), 'content-length': '0' }), 405, 'METHOD_NOT_ALLOWED');
  for (const path of [
    '/as/v1/admin/healthz',
    '/as/v1/admin/nodegroup',
    '/as/v1/admin/nodegroup/status/default',
    '/as/v1/streams/stream/node-groups',
    '/as/v1/streams/stream/default',
    '/as/v1/streams/stream/default/publish/live/cam1',
    '/as/v1/streams/provision/default',
  ]) {
    isProblem(t, await svc.get(path), 404, 'NOT_FOUND');
  }
  const doc = (await svc.get('/as/v1/openapi.json', null)).json as { paths: Record<string, Record<string, { tags: string[] }>> };
  const tags = new Set(Object.values(doc.paths).flatMap((methods) => Object.values(methods).flatMap((op) => op.tags)));
  t.false(tags.has('red5-sm2'));
  t.false('put' in doc.paths['/as/v1/auth/login']!);
});
