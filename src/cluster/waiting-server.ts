// While a cluster-mode instance waits for NATS at start (docs/cluster.md), it already answers on
// its port: /as/v1/healthz says it lives, /as/v1/readyz says why it is not ready, and everything
// else is 503 NOT_READY with Retry-After. A load balancer sees an instance that is starting, not a
// dead one, and an operator sees why. The real server takes the port once NATS answers.
import { createServer, type Server } from 'node:http';
import { PROBLEM_CONTENT_TYPE, problemJson } from '../schemas/problem.js';

export interface Waiting {
  /** Why the instance is not ready yet (shown by /readyz). */
  why: string;
  close(): Promise<void>;
}

export async function waitingServer(host: string, port: number): Promise<Waiting> {
  const state = { why: 'connecting to NATS' };
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    res.setHeader('cache-control', 'no-store');
    res.setHeader('x-content-type-options', 'nosniff');
    if (path === '/as/v1/healthz') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ status: 'ok' }));
    }
    const detail = path === '/as/v1/readyz' ? `not ready: ${state.why}` : `the service is starting: ${state.why}`;
    res.writeHead(503, { 'content-type': PROBLEM_CONTENT_TYPE, 'retry-after': '5', connection: 'close' });
    res.end(problemJson({ status: 503, code: 'NOT_READY', detail }));
  });
  // A port that cannot be had now is left to the real server, which says so as a setting.
  const listening = await new Promise<boolean>((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, host, () => resolve(true));
  });
  return {
    get why() {
      return state.why;
    },
    set why(w: string) {
      state.why = w;
    },
    close: () =>
      new Promise<void>((resolve) => {
        if (!listening) return resolve();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
