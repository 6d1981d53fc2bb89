// Admission on real media nodes (docs/security.md, "Who may publish and play"): the service as a
// process, nginx-rtmp nodes asking their agents before every publish and play, unmodified ffmpeg
// as publisher and player. Only the answer's url publishes, only on the origin it names, for the
// stream it names, while it is valid; the same for players on edges. When the binding moves, or
// the stream is ended through the API, the publisher is cut off where it no longer belongs.
// Each assertion is made by what nginx and the stream's state show. Every wait is bounded.
import test from 'ava';
import { inService, waitForEvents } from '../helpers/events.js';
import { request } from '../helpers/http.js';
import { playFrames, publish } from '../helpers/media.js';
import { mediaService } from '../helpers/process.js';
import { until } from '../helpers/until.js';
import { RTMP_PORT, rtmpGroup, STAT_PORT } from '../helpers/fixtures.js';

const PASSWORD = 'admission-e2e-password';
/** The short group's clock slack: a fresh token lasts its 1 s TTL plus this. */
const LEEWAY_MS = 5000;

const timing = { streamTimeout: '3s', publishTimeout: '60s' };
const GROUPS = [
  rtmpGroup({ name: 'default', firstAddress: '127.1.70.2', origins: { min: 2, max: 2, limit: 20 }, edges: { min: 1, max: 1, limit: 50 }, timing }),
  // Tokens that expire within seconds: what an expired token meets. The clock slack is what a
  // fresh token has for ffmpeg to start and connect on a loaded machine (2 s was short once).
  { ...rtmpGroup({ name: 'short', firstAddress: '127.1.71.2', origins: { min: 1, max: 1, limit: 20 }, edges: null, timing }), admission: { tokenTtl: '1s', clockLeeway: `${LEEWAY_MS}ms` } },
];

interface Answer {
  serverAddress: string;
  nodeId: string;
  url: string;
  token: string;
  expiresAt: string;
}
interface StreamView {
  name: string;
  state: string;
  nodeGroup: string;
  origin: { nodeId: string };
}

const withoutToken = (url: string) => url.replace(/\?token=.*$/, '');

test('only the url of a lookup publishes or plays, where it says and while it is valid; a moved or ended stream is cut off where it was', async (t) => {
  const { svc, token, tools, ffmpegs } = await mediaService(t, 'switchyard-admission-e2e-', GROUPS, PASSWORD);
  const call = async <T>(method: string, path: string, status: number): Promise<T> => {
    const r = await request(svc.url, method, path, undefined, { authorization: `Bearer ${token}` });
    if (r.status !== status) throw new Error(`${method} ${path}: ${r.status} ${r.text}`);
    return r.json as T;
  };
  const lookup = (path: string) => call<Answer>('GET', path, 200);
  const stream = async (name: string, group = 'default') => (await call<StreamView[]>('GET', `/as/v1/streams?nodeGroup=${group}`, 200)).find((s) => s.name === name);
  /** What the node's own nginx says it carries: its stat page. */
  const onStatPage = async (address: string, name: string) => (await (await fetch(`http://${address}:${STAT_PORT}/stat`)).text()).includes(`<name>${name}</name>`);
  /** A publisher that nginx refuses ends by itself, at once: its exit is the event waited for. */
  const refusedPublish = async (url: string) => {
    const p = publish(ffmpegs, tools.ffmpeg, url);
    const exit = await Promise.race([p.exited, new Promise<null>((r) => setTimeout(() => r(null), 20_000))]);
    return exit !== null && exit.code !== 0;
  };
  await waitForEvents(svc.url, token, (seen) => inService(seen).size >= 4, { timeoutMs: 40_000 });

  // Two streams, bound to the two origins (lookups spread new streams over origins with room).
  const first = await lookup('/as/v1/streams/live/cam1/publish');
  let second = await lookup('/as/v1/streams/live/cam2/publish');
  for (let i = 3; second.nodeId === first.nodeId && i < 30; i++) second = await lookup(`/as/v1/streams/live/cam${i}/publish`);
  t.not(second.nodeId, first.nodeId, 'a stream bound to the other origin');
  const origin = first.serverAddress;
  const cam1 = (url: string) => `rtmp://${origin}:${RTMP_PORT}/live/cam1${url}`;

  t.true(await refusedPublish(withoutToken(first.url)), 'no token');
  t.true(await refusedPublish(cam1(`?token=${second.token}`)), 'a token for another stream, on another origin');
  const secondName = new URL(second.url).pathname.split('/').pop()!;
  t.true(await refusedPublish(`rtmp://${origin}:${RTMP_PORT}/live/${secondName}?token=${second.token}`), "another origin's token, for its own stream");
  t.true(await refusedPublish(cam1('?token=not.a.token')), 'a forged token');
  t.false(await onStatPage(origin, 'cam1'), 'nginx never took cam1');
  t.is((await stream('cam1'))?.state, 'PENDING', 'and it never went LIVE');

  // The answer's url, unmodified, publishes.
  const publisher = publish(ffmpegs, tools.ffmpeg, first.url);
  await until(async () => (await stream('cam1'))?.state === 'LIVE', 20_000, 'cam1 to turn LIVE');

  // Players: only the url of a subscribe lookup, on its edge.
  const edge = await lookup('/as/v1/streams/live/cam1/subscribe');
  const player = (url: string) => playFrames(ffmpegs, tools, url, 25, (l) => t.log(l), 1, 20_000);
  t.is((await player(withoutToken(edge.url))).frames, 0, 'a player without a token');
  t.is((await player(`${withoutToken(edge.url)}?token=${first.token}`)).frames, 0, 'a publish token does not play');
  const played = await playFrames(ffmpegs, tools, edge.url, 25, (l) => t.log(l), 3, 25_000);
  t.true(played.frames >= 25, `frames through origin → edge with the answer's url: ${played.frames}\n${played.output}`);

  // An expired token (group 'short': 1 s, and LEEWAY_MS of clock slack) is refused; a fresh one is not.
  const short = await lookup('/as/v1/streams/live/late/publish?nodeGroup=short');
  const expired = Date.parse(short.expiresAt) + LEEWAY_MS;
  await until(async () => Date.now() > expired + 1000, 10_000, 'the token to expire');
  t.true(await refusedPublish(short.url), 'an expired token');
  const fresh = await lookup('/as/v1/streams/live/late/publish?nodeGroup=short');
  publish(ffmpegs, tools.ffmpeg, fresh.url);
  await until(async () => (await stream('late', 'short'))?.state === 'LIVE', 20_000, 'late to turn LIVE with a fresh token');

  // The binding moves: cam1's origin drains, the next publish lookup binds cam1 to the other
  // origin, and the old origin drops the publisher it still has.
  await call('POST', `/as/v1/nodegroups/default/nodes/${first.nodeId}/drain`, 202);
  const moved = await lookup('/as/v1/streams/live/cam1/publish');
  t.is(moved.nodeId, second.nodeId);
  const exited = await Promise.race([publisher.exited, new Promise<null>((r) => setTimeout(() => r(null), 20_000))]);
  t.not(exited, null, 'the publisher at the old origin was disconnected');
  // The drained origin may be gone by then (empty, it is removed): gone, it does not carry cam1.
  await until(async () => !(await onStatPage(origin, 'cam1').catch(() => false)), 10_000, 'cam1 to leave the old origin');
  t.true(await refusedPublish(first.url), 'its old token no longer publishes there');
  const republished = publish(ffmpegs, tools.ffmpeg, moved.url);
  await until(
    async () => {
      const s = await stream('cam1');
      return s?.state === 'LIVE' && s.origin.nodeId === second.nodeId;
    },
    20_000,
    'cam1 LIVE on the new origin',
  );

  // Ended through the API: unbound at once, the publisher cut off, its url refused.
  await call('POST', '/as/v1/streams/default/cam1/end', 204);
  const ended = await Promise.race([republished.exited, new Promise<null>((r) => setTimeout(() => r(null), 20_000))]);
  t.not(ended, null, 'the publisher of the ended stream was disconnected');
  t.true(await refusedPublish(moved.url), "the ended stream's url no longer publishes");
  t.is(await stream('cam1'), undefined);
});
