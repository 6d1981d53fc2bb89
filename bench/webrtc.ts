// Bench 8: WebRTC through the signalling proxy (docs/webrtc.md). The service runs a local group
// of werift nodes (an origin and an edge on 127.4.5.x); ffmpeg's VP8 is published through the
// proxy. Measured, in the same run:
//  - time to first frame of a WHEP viewer through the proxy, against a viewer that looks the
//    stream up (endpoint 5) and connects to the node's URL directly (trials alternate);
//  - WHIP and WHEP sessions per second the proxy sets up (offer → the node's answer → DELETE),
//    against the same sessions POSTed to the node directly, and against endpoint 5's lookup alone.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RTCPeerConnection } from 'werift';
import { withoutStun } from '../src/agent/webrtc/werift/peers.js';
import { openEvents } from '../src/events/stream-client.js';
import { projectPath } from '../src/paths.js';
import { type Answered, VideoSource, WhepViewer, WhipPublisher } from '../src/cli/webrtc-client.js';
import { adminToken, BENCH_PASSWORD, benchConfig, runServer } from './lib/servers.js';
import { pct, table } from './lib/table.js';
import { localGroup } from '../test/helpers/fixtures.js';
import { killAgentsOf } from '../test/helpers/service.js';

const TRIALS = Number(process.env.BENCH_TRIALS ?? 20);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 8);

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};
const ms = (x: number) => `${Math.round(x)} ms`;

/** Retries a connect as a client would (a fresh edge may not have its parent yet), within 20 s. */
async function connectUntil(connect: () => Promise<Answered>): Promise<Answered> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const a = await connect().catch((err: Error) => ({ status: 0, text: err.message }) as Answered);
    if (a.status === 201 || Date.now() > deadline) return a;
    await new Promise((r) => setTimeout(r, 500));
  }
}

/** A real receive-only offer, made once: the sessions-per-second load POSTs it again and again (the node answers each; none connects). */
async function sampleOffer(): Promise<string> {
  const pc = new RTCPeerConnection({ bundlePolicy: 'max-bundle', iceServers: [], iceUseIpv6: false, iceInterfaceAddresses: { udp4: '127.0.0.1' }, iceAdditionalHostAddresses: ['127.0.0.1'] });
  pc.addTransceiver('video', { direction: 'recvonly' });
  pc.addTransceiver('audio', { direction: 'recvonly' });
  const offer = await pc.createOffer();
  withoutStun(pc);
  await pc.setLocalDescription(offer);
  await new Promise((r) => setTimeout(r, 200));
  const sdp = pc.localDescription!.sdp;
  await pc.close();
  return sdp;
}

/** As many `one()` as `CONCURRENCY` loops finish in SECONDS: per second, p50/p99 latency, failures. */
async function rate(one: (i: number) => Promise<boolean>): Promise<{ perSecond: number; p50: number; p99: number; failed: number }> {
  const deadline = performance.now() + SECONDS * 1000;
  const times: number[] = [];
  let failed = 0;
  let n = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < deadline) {
        const started = performance.now();
        const ok = await one(n++).catch(() => false);
        if (ok) times.push(performance.now() - started);
        else failed++;
      }
    }),
  );
  return { perSecond: times.length / SECONDS, p50: quantile(times, 0.5), p99: quantile(times, 0.99), failed };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-webrtc-bench-'));
  const config = benchConfig(dir, {
    geoip: { enabled: false },
    defaultNodeGroup: 'rtc',
    limits: { lookups: { admin: { perSecond: 100_000, burst: 100_000 } } },
    nodeGroups: [
      {
        ...localGroup({
          name: 'rtc',
          firstAddress: '127.4.5.2',
          local: { backend: 'werift' },
          origins: { min: 1, max: 1, limit: 100_000 },
          edges: { min: 1, max: 1, limit: 100_000 },
          timing: { heartbeatMs: 500, nodeTimeout: '10s' },
        }),
        limits: { pendingBindings: 1_000_000, pendingPerToken: 1_000_000 },
      },
    ],
  });
  const sy = await runServer(projectPath('dist', 'src', 'main.js'), { SWITCHYARD_CONFIG: config, SWITCHYARD_ADMIN_PASSWORD: BENCH_PASSWORD });
  const source = await VideoSource.start();
  const publisher = new WhipPublisher(source);
  const viewer = new WhepViewer();
  try {
    const token = await adminToken(sy.url);
    const auth = { authorization: `Bearer ${token}` };
    // Two nodes in service.
    const up = new AbortController();
    const states = new Map<string, string | null>();
    for await (const e of await openEvents(sy.url, token, { since: 0, signal: up.signal })) {
      if (e.type === 'node.state') states.set(e.nodeId, e.to);
      if ([...states.values()].filter((s) => s === 'INSERVICE').length >= 2) break;
    }
    up.abort();
    const proxy = (protocol: 'whip' | 'whep', stream: string) => `${sy.url}/as/v1/proxy/${protocol}/live/${stream}`;
    const published = await connectUntil(() => publisher.connect(proxy('whip', 'cam1'), { headers: auth }));
    if (published.status !== 201) throw new Error(`could not publish: ${published.status} ${published.text}`);

    // Time to first frame, alternating: through the proxy, and a lookup then the node directly.
    const rows: Record<'proxy' | 'direct', { answer: number[]; packet: number[]; frame: number[] }> = { proxy: { answer: [], packet: [], frame: [] }, direct: { answer: [], packet: [], frame: [] } };
    for (let trial = -1; trial < TRIALS; trial++) {
      for (const how of ['proxy', 'direct'] as const) {
        // Out of step with the publisher's keyframes (one a second): otherwise every trial would
        // start just after one and wait a whole GOP for the next.
        await new Promise((r) => setTimeout(r, Math.random() * 1000));
        const started = performance.now();
        let answered: Answered;
        let lookupMs = 0;
        if (how === 'proxy') answered = await connectUntil(() => viewer.connect(proxy('whep', 'cam1'), { headers: auth }));
        else {
          const found = (await (await fetch(`${sy.url}/as/v1/streams/live/cam1/subscribe`, { headers: auth })).json()) as { url: string };
          lookupMs = performance.now() - started;
          answered = await connectUntil(() => viewer.connect(found.url));
        }
        if (answered.status !== 201) throw new Error(`${how}: ${answered.status} ${answered.text}`);
        await viewer.media(1, 1, 20_000);
        // The first round warms the edge's pull from the origin: not counted.
        if (trial >= 0) {
          // The viewer's clock starts at its offer; the lookup before it counts too.
          const offset = performance.now() - started - (viewer.firstFrameMs ?? 0);
          rows[how].answer.push(lookupMs + answered.ms);
          rows[how].packet.push(offset + (viewer.firstPacketMs ?? NaN));
          rows[how].frame.push(performance.now() - started);
        }
        await viewer.close();
      }
    }
    console.log(
      `\nWebRTC: a WHEP viewer's first RTP packet and first VP8 keyframe (ffmpeg, 320x240, a keyframe every second, trials started at random points of it), ${TRIALS} trials each, alternating\n`,
    );
    const p = rows.proxy;
    const d = rows.direct;
    console.log(
      table(
        ['how', 'signalling p50 (lookup and POST)', 'p90', 'to first RTP p50', 'p90', 'vs direct (p50)', 'to first keyframe p50', 'p90'],
        (
          [
            ['through the proxy (one POST)', p],
            ['endpoint 5, then the node', d],
          ] as const
        ).map(([name, r]) => [
          name,
          ms(quantile(r.answer, 0.5)),
          ms(quantile(r.answer, 0.9)),
          ms(quantile(r.packet, 0.5)),
          ms(quantile(r.packet, 0.9)),
          pct(quantile(r.packet, 0.5), quantile(d.packet, 0.5)),
          ms(quantile(r.frame, 0.5)),
          ms(quantile(r.frame, 0.9)),
        ]),
      ),
    );

    // Sessions per second: offer → answer → DELETE, through the proxy and at the node.
    const offer = await sampleOffer();
    const whipOffer = offer.replace(/a=recvonly/g, 'a=sendonly');
    const session = async (url: string, body: string, headers: Record<string, string>) => {
      const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/sdp', ...headers }, body });
      await r.text();
      if (r.status !== 201) return false;
      const del = await fetch(new URL(r.headers.get('location')!, url), { method: 'DELETE' });
      await del.body?.cancel();
      return del.status === 200;
    };
    const edgeUrl = ((await (await fetch(`${sy.url}/as/v1/streams/live/cam1/subscribe`, { headers: auth })).json()) as { url: string }).url;
    const results: Array<[string, Awaited<ReturnType<typeof rate>>]> = [];
    results.push([
      'endpoint 5 lookup alone (baseline)',
      await rate(async () => {
        const r = await fetch(`${sy.url}/as/v1/streams/live/cam1/subscribe`, { headers: auth });
        await r.text();
        return r.status === 200;
      }),
    ]);
    results.push(['WHEP at the edge, direct (token from one lookup)', await rate(() => session(edgeUrl, offer, {}))]);
    results.push(['WHEP through the proxy', await rate(() => session(proxy('whep', 'cam1'), offer, auth))]);
    // WHIP: each session a new stream (a binding committed, then its publisher at the origin).
    const whipDirect = await rate(async (i) => {
      const found = (await (await fetch(`${sy.url}/as/v1/streams/live/d${i}/publish`, { headers: auth })).json()) as { url: string };
      return session(found.url, whipOffer, {});
    });
    results.push(['WHIP: endpoint 4, then the origin directly', whipDirect]);
    results.push(['WHIP through the proxy (one POST)', await rate((i) => session(proxy('whip', `p${i}`), whipOffer, auth))]);
    console.log(`\nWebRTC sessions set up per second (offer → the node's answer → DELETE; ${CONCURRENCY} at a time, ${SECONDS} s each)\n`);
    const base = results[1]![1].perSecond;
    const whipBase = whipDirect.perSecond;
    console.log(
      table(
        ['load', 'per second', 'p50', 'p99', 'failed', 'vs direct'],
        results.map(([name, r]) => [
          name,
          r.perSecond.toFixed(1),
          ms(r.p50),
          ms(r.p99),
          r.failed,
          name.startsWith('WHEP') ? pct(r.perSecond, base) : name.startsWith('WHIP') ? pct(r.perSecond, whipBase) : '-',
        ]),
      ),
    );
  } finally {
    await Promise.allSettled([viewer.close(), publisher.close()]);
    await source.stop();
    await sy.stop();
    // Agents the service started are its own; any left by a failure are stopped here.
    killAgentsOf(join(dir, 'data'));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    console.error(err);
    process.exit(1);
  },
);
