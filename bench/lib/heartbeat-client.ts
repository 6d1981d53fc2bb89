// A heartbeat load generator in its own process: autocannon posting node events for `nodes` static
// nodes round-robin, each with its own node token. Prints one JSON line with its results.
import autocannon from 'autocannon';
import { TokenSigner } from '../../src/auth/tokens.js';
import { BENCH_SECRET } from './servers.js';

const [url, nodes, connections, seconds, pipelining] = process.argv.slice(2).map((a, i) => (i === 0 ? a : Number(a))) as [string, number, number, number, number];
const signer = new TokenSigner(Buffer.from(BENCH_SECRET));
const tokens = Array.from({ length: nodes }, (_, i) => `Bearer ${signer.nodeToken('bench', `e${i}`, 3_600_000)}`);
const body = JSON.stringify({ ready: true, metrics: { 'connections.subscriber': 3, 'cpu.load': 0.2 }, streams: [] });
let n = 0;
const result = await autocannon({
  url,
  connections,
  pipelining: pipelining || 1,
  duration: seconds,
  requests: [
    {
      method: 'POST',
      path: '/as/v1/nodes/e0/events',
      setupRequest: ((req: Record<string, unknown>) => {
        const i = n++ % nodes;
        return { ...req, path: `/as/v1/nodes/e${i}/events`, headers: { 'content-type': 'application/json', authorization: tokens[i] }, body };
      }) as never,
    },
  ],
});
process.stdout.write(`${JSON.stringify({ rps: Math.round(result.requests.average), p99: result.latency.p99, errors: result.errors + result.timeouts, non2xx: result.non2xx })}\n`);
