// Baseline: the bare node:http server, answering a fixed assignment-sized JSON.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

const body = JSON.stringify({ serverAddress: '10.0.0.1', scope: 'live', name: 'cam', nodeId: 'r1-edge-000001', role: 'edge', region: 'r1', port: 443, protocol: 'wss' });
const server = createServer((_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ msg: 'listening', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
