// Whether a TCP port is free on an address, by binding it for a moment. nginx that finds its port
// taken retries for 2.5 s and exits; knowing first gives a clear reason, or another port.
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

export async function allFree(host: string, ports: readonly number[]): Promise<boolean> {
  for (const p of ports) if (!(await portFree(host, p))) return false;
  return true;
}

/** Polls until every port is free or `ms` have passed. */
export async function waitFree(host: string, ports: readonly number[], ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (await allFree(host, ports)) return true;
    if (Date.now() >= deadline) return false;
    await sleep(50);
  }
}

/** The first `count` ports from `from` upwards that are free on `host` (at most `span` tried). */
export async function freePorts(host: string, from: number, count: number, avoid: readonly number[] = [], span = 200): Promise<number[] | null> {
  const found: number[] = [];
  for (let p = from; p < Math.min(65536, from + span) && found.length < count; p++) {
    if (avoid.includes(p)) continue;
    if (await portFree(host, p)) found.push(p);
  }
  return found.length === count ? found : null;
}
