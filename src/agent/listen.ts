// Where a node's HTTP server listens (the simulated node's session API, a WebRTC node's WHIP and
// WHEP endpoints): the address and port asked for, else a free port there, else a free port on
// 127.0.0.1 (a loopback address the machine does not route, a port another program holds).
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export async function listenWithFallback(make: () => Server, address: string, port: number): Promise<{ server: Server; address: string; port: number }> {
  const attempts: Array<[string, number]> = [
    [address, port],
    [address, 0],
    ['127.0.0.1', 0],
  ];
  for (const [host, p] of attempts) {
    const server = make();
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(p, host, () => resolve());
      });
      return { server, address: host, port: (server.address() as AddressInfo).port };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EADDRINUSE' && code !== 'EADDRNOTAVAIL' && code !== 'EACCES') throw err;
    }
  }
  throw new Error(`cannot listen on ${address}:${port}`);
}
