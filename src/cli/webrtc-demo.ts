// `npm run demo:webrtc`: a WHIP/WHEP round trip through a running service's signalling proxy
// (docs/webrtc.md), with the service on config/examples/webrtc.json. ffmpeg's test pattern is
// encoded to VP8 and published with WHIP; a WHEP viewer plays it back through an edge and counts
// what arrives; endpoint 5's answer is shown; both sessions end with DELETE. Bounded: gives up
// after DEMO_TIMEOUT_S (default 60) seconds.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Answered, VideoSource, WhepViewer, WhipPublisher } from './webrtc-client.js';

const BASE = (process.env.SWITCHYARD_URL ?? 'http://127.0.0.1:5080').replace(/\/$/, '');
const STREAM = process.env.DEMO_STREAM ?? 'cam1';
const deadline = Date.now() + Number(process.env.DEMO_TIMEOUT_S ?? 60) * 1000;
const started = Date.now();
const say = (line: string) => process.stdout.write(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)} s] ${line}\n`);

/** A token: SWITCHYARD_TOKEN, else a login as admin with SWITCHYARD_ADMIN_PASSWORD or the example's generated password. */
async function token(): Promise<string> {
  if (process.env.SWITCHYARD_TOKEN) return process.env.SWITCHYARD_TOKEN;
  const password = process.env.SWITCHYARD_ADMIN_PASSWORD ?? readFileSync(resolve(process.env.SWITCHYARD_DATA_DIR ?? 'data-webrtc', 'initial-admin-password'), 'utf8').trim();
  const res = await fetch(`${BASE}/as/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'admin', password }) });
  if (!res.ok) throw new Error(`login failed: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { accessToken: string }).accessToken;
}

/** Connects as a player does: a 503 (no node ready yet, a node replaced) is tried again after Retry-After. */
async function connect(what: string, attempt: () => Promise<Answered>): Promise<Answered> {
  for (;;) {
    const a = await attempt().catch((err: Error) => ({ status: 0, text: err.message, location: null, node: null, ms: 0 }) as Answered);
    if (a.status === 201) return a;
    if (Date.now() > deadline || (a.status >= 400 && a.status < 500)) throw new Error(`${what}: ${a.status} ${a.text.slice(0, 300)}`);
    say(`${what}: ${a.status || 'no answer'}, trying again`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

async function main(): Promise<void> {
  const auth = { authorization: `Bearer ${await token()}` };
  const source = await VideoSource.start(process.env.SWITCHYARD_FFMPEG_BIN ?? 'ffmpeg');
  const publisher = new WhipPublisher(source);
  const viewer = new WhepViewer();
  try {
    const pub = await connect('WHIP', () => publisher.connect(`${BASE}/as/v1/proxy/whip/live/${STREAM}`, { headers: auth }));
    say(`WHIP through the proxy: 201 in ${Math.round(pub.ms)} ms, publishing on ${pub.node}; Location ${pub.location}`);
    const view = await connect('WHEP', () => viewer.connect(`${BASE}/as/v1/proxy/whep/live/${STREAM}`, { headers: auth }));
    say(`WHEP through the proxy: 201 in ${Math.round(view.ms)} ms, playing from ${view.node}`);
    await viewer.media(100, 2, Math.max(1000, deadline - Date.now()));
    say(
      `the viewer received ${viewer.packets} RTP packets and ${viewer.keyframes} VP8 keyframes (${viewer.size?.width}x${viewer.size?.height}); the first keyframe ${Math.round(viewer.firstFrameMs ?? 0)} ms after its offer`,
    );
    const answer = (await (await fetch(`${BASE}/as/v1/streams/live/${STREAM}/subscribe`, { headers: auth })).json()) as { protocol: string; nodeId: string; url: string };
    say(`endpoint 5 answers ${answer.protocol} on ${answer.nodeId}: ${answer.url.replace(/token=.*/, 'token=…')}`);
  } finally {
    await viewer.close();
    await publisher.close();
    await source.stop();
    say('both sessions ended (DELETE on their Locations)');
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  },
);
