// Baseline: a bare Koa app with one @koa/router route answering the same fixed JSON.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import Router from '@koa/router';

const answer = { serverAddress: '10.0.0.1', scope: 'live', name: 'cam', nodeId: 'r1-edge-000001', role: 'edge', region: 'r1', port: 443, protocol: 'wss' };
const app = new Koa();
const router = new Router();
router.get('/as/v1/streams/live/:streamName/subscribe', (ctx) => {
  ctx.body = answer;
});
app.use(router.routes());
const server = createServer(app.callback());
server.listen(0, '127.0.0.1', () => process.stdout.write(`${JSON.stringify({ msg: 'listening', url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
