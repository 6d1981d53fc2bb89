// On the shipped default config (local nodes, the bundled GeoIP database): users in Europe and in
// North America get nodes of their own regions; X-Forwarded-For counts only when trusted; and an
// ABR stream goes from provision through the transcoder to viewers of each rendition.
import { readFileSync } from 'node:fs';
import test from 'ava';
import { DEFAULT_CONFIG_FILE } from '../../src/config/load.js';
import { inService, waitForEvents } from '../helpers/events.js';
import { body, request } from '../helpers/http.js';
import { OwnService } from '../helpers/process.js';
import { until } from '../helpers/until.js';

const EUROPE = '81.2.69.142';
const AMERICA = '8.8.8.8';

test('geo routing on the default config, and an ABR stream from provision to its viewers', async (t) => {
  // The default config as shipped, on a free port, with trustProxy on so X-Forwarded-For can be shown to count.
  const config = JSON.parse(readFileSync(DEFAULT_CONFIG_FILE, 'utf8')) as {
    server: Record<string, unknown>;
    nodeGroups: Array<{ platform: { local: Record<string, unknown> }; timing: Record<string, unknown> }>;
  };
  config.server.port = 0;
  config.server.trustProxy = 1;
  config.nodeGroups[0]!.platform.local.firstAddress = '127.0.30.2';
  config.nodeGroups[0]!.platform.local.port = 0;
  config.nodeGroups[0]!.timing.heartbeatMs = 300;
  const svc = await OwnService.start(t, config);
  const token = await svc.login();
  const get = (path: string, headers: Record<string, string> = {}) => request(svc.url, 'GET', path, undefined, { authorization: `Bearer ${token}`, ...headers });
  await waitForEvents(svc.url, token, (s) => inService(s).size >= 5);

  // Europe and North America, by clientIp.
  t.is(body<{ region: string }>(await get(`/as/v1/streams/live/eu-cam/publish?clientIp=${EUROPE}`)).region, 'eu-west');
  t.is(body<{ region: string }>(await get(`/as/v1/streams/live/us-cam/publish?clientIp=${AMERICA}`)).region, 'us-east');
  t.is(body<{ region: string }>(await get(`/as/v1/streams/live/eu-cam/subscribe?clientIp=${EUROPE}`)).region, 'eu-west');
  // The trusted proxy's X-Forwarded-For names the client; a private address falls back to the configured order.
  t.is(body<{ region: string }>(await get('/as/v1/streams/live/xff/publish', { 'x-forwarded-for': `${EUROPE}` })).region, 'eu-west');
  t.is(body<{ region: string }>(await get('/as/v1/streams/live/local/publish', { 'x-forwarded-for': '10.1.2.3' })).region, 'us-east');
  // strict: the nearest region or nothing. eu-west has no transcoder (min 0): 503, not us-east.
  const strict = await get(`/as/v1/streams/stream/default/none?transcode=true&strict=true&clientIp=${EUROPE}`);
  t.is(strict.status, 404, 'no provision yet');

  // ABR: a provision, the transcoder, the renditions LIVE on the bound origin, a viewer for each.
  const ladder = {
    streamName: 'show',
    region: 'us-east',
    streams: [
      { name: 'show_720', level: 1, videoBR: 2_500_000, videoWidth: 1280, videoHeight: 720, videoFPS: 30, audioBR: 128_000 },
      { name: 'show_360', level: 2, videoBR: 800_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 },
    ],
  };
  t.is((await request(svc.url, 'POST', '/as/v1/provision/default', ladder, { authorization: `Bearer ${token}` })).status, 201);
  t.is((await get(`/as/v1/streams/stream/default/show?transcode=true&strict=true&clientIp=${EUROPE}`)).status, 503, 'strict: no transcoder in eu-west');
  const transcoder = body<{ nodeId: string; serverAddress: string; role: string; token: string }>(await get(`/as/v1/streams/stream/default/show?transcode=true&clientIp=${AMERICA}`));
  t.is(transcoder.role, 'transcoder');
  const detail = async () =>
    body<{ nodeList: Array<{ id: string; role: string; parent: string | null; address: string; listeners: { publish?: { port: number } } }> }>(await get('/as/v1/nodegroups/default')).nodeList;
  const streams = async () => body<Array<{ name: string; state: string; origin: { nodeId: string }; transcoder?: { nodeId: string }; renditions?: string[] }>>(await get('/as/v1/streams'));
  const bound = (await streams()).find((s) => s.name === 'show')!;
  t.is(bound.transcoder?.nodeId, transcoder.nodeId);
  t.deepEqual(bound.renditions, ['show_720', 'show_360']);
  // The publisher connects to the transcoder (endpoint 2 has no port: the node's listener is in the group detail).
  const port = (await detail()).find((n) => n.id === transcoder.nodeId)!.listeners.publish!.port;
  // With the answer's admission token (docs/security.md, "Who may publish and play"): without it, refused.
  t.is((await request(`http://${transcoder.serverAddress}:${port}`, 'POST', '/live/show/publish')).status, 403);
  t.is((await request(`http://${transcoder.serverAddress}:${port}`, 'POST', '/live/show/publish', undefined, { authorization: `Bearer ${transcoder.token}` })).status, 201);
  await until(async () => (await streams()).find((s) => s.name === 'show')?.state === 'LIVE', 15_000, 'the renditions to reach the origin');
  for (const rendition of ['show_720', 'show_360']) {
    const edge = body<{ nodeId: string; role: string; name: string }>(await get(`/as/v1/streams/live/${rendition}/subscribe?clientIp=${AMERICA}`));
    t.is(edge.role, 'edge');
    t.is(edge.name, rendition);
    t.is((await detail()).find((n) => n.id === edge.nodeId)?.parent, bound.origin.nodeId, `${rendition}: an edge under the bound origin`);
  }
});
