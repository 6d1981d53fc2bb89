// The heartbeat load generator, run in its own process by heartbeatLoad(). Over HTTP: autocannon
// posting node events for `nodes` static nodes round-robin, each with its own node token. Over
// node channels: one WebSocket per node, each sending its next event as soon as the last is
// answered, or (with a rate) events offered at that rate whatever the answers do, as a fleet
// does. Prints one JSON line with its results.
import autocannon from 'autocannon';
import WebSocket from 'ws';
import { channelUrl } from '../../src/agent/heartbeats.js';
import { TokenSigner } from '../../src/auth/tokens.js';
import { Histogram } from './histogram.js';
import { BENCH_NODE_TOKEN_TTL, BENCH_SECRET } from './servers.js';

const [url, nodes, connections, seconds, pipelining] = process.argv.slice(2, 7).map((a, i) => (i === 0 ? a : Number(a))) as [string, number, number, number, number];
const transport = process.argv[7] === 'channel' ? 'channel' : 'http';
/** Events per second offered over all channels; 0: as fast as they are answered. */
const rate = Number(process.argv[8] ?? 0);
const signer = new TokenSigner(Buffer.from(BENCH_SECRET));
const body = JSON.stringify({ ready: true, metrics: { 'connections.subscriber': 3, 'cpu.load': 0.2 }, streams: [] });
const token = (i: number) => signer.nodeToken('bench', `e${i}`, BENCH_NODE_TOKEN_TTL);

interface Result {
  rps: number;
  p99: number;
  errors: number;
  non2xx: number;
}

async function overHttp(): Promise<Result> {
  // One prebuilt request per node: autocannon builds static requests once and cycles through
  // them, where a setupRequest hook would rebuild every request (and make the generator the
  // bottleneck).
  const requests = Array.from({ length: nodes }, (_, i) => ({
    method: 'POST' as const,
    path: `/as/v1/nodes/e${i}/events`,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token(i)}` },
    body,
  }));
  const result = await autocannon({ url, connections, pipelining: pipelining || 1, duration: seconds, requests });
  return { rps: Math.round(result.requests.average), p99: result.latency.p99, errors: result.errors + result.timeouts, non2xx: result.non2xx };
}

async function overChannels(): Promise<Result> {
  const latency = new Histogram();
  let answered = 0;
  let errors = 0;
  let refused = 0;
  let measuring = false;
  let running = true;
  const channels = await Promise.all(
    Array.from(
      { length: nodes },
      (_, i) =>
        new Promise<WebSocket>((resolve, reject) => {
          const ws = new WebSocket(channelUrl(url, `e${i}`), { headers: { authorization: `Bearer ${token(i)}` }, perMessageDeflate: false });
          ws.once('open', () => resolve(ws));
          ws.once('error', reject);
        }),
    ),
  );
  const sentAt = channels.map(() => [] as number[]);
  const send = (i: number) => {
    sentAt[i]!.push(performance.now());
    channels[i]!.send(body);
  };
  channels.forEach((ws, i) => {
    ws.on('message', (data) => {
      const sent = sentAt[i]!.shift()!;
      if (measuring) {
        latency.record(performance.now() - sent);
        answered++;
        if (data.toString().includes('"status"')) refused++;
      }
      if (running && rate === 0) send(i);
    });
    ws.on('error', () => errors++);
    if (rate === 0) for (let k = 0; k < (pipelining || 1); k++) send(i);
  });
  // Open loop: every 10 ms, the events due since the last tick, to the channels in turn.
  let next = 0;
  let due = 0;
  const ticker =
    rate > 0
      ? setInterval(() => {
          due += rate / 100;
          for (; due >= 1 && running; due--) {
            send(next);
            next = (next + 1) % channels.length;
          }
        }, 10)
      : undefined;
  // Every channel open: the parent may start what it measures alongside.
  process.stdout.write('{"ready":true}\n');
  measuring = true;
  const started = performance.now();
  await new Promise((r) => setTimeout(r, seconds * 1000));
  measuring = false;
  running = false;
  clearInterval(ticker);
  const elapsed = (performance.now() - started) / 1000;
  for (const ws of channels) ws.terminate();
  return { rps: Math.round(answered / elapsed), p99: latency.percentile(99), errors, non2xx: refused };
}

if (transport === 'http') process.stdout.write('{"ready":true}\n');
const result = transport === 'channel' ? await overChannels() : await overHttp();
process.stdout.write(`${JSON.stringify(result)}\n`);
