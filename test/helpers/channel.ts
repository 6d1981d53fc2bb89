// A node channel (a WebSocket, src/http/node-channel.ts) for tests: messages as a queue to await,
// and upgrade attempts whose refusals are read as ordinary HTTP answers.
import { request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import type { Reply } from './http.js';

export interface Channel {
  ws: WebSocket;
  send(message: unknown): void;
  /** The next message, parsed. */
  next(): Promise<Record<string, unknown>>;
  /** Resolves when the channel closes, with the code and reason the server gave. */
  closed: Promise<{ code: number; reason: string }>;
}

export const channelUrl = (base: string, nodeId: string) => `${base.replace(/^http/, 'ws')}/as/v1/nodes/${encodeURIComponent(nodeId)}/events`;

export function openChannel(base: string, nodeId: string, token: string): Promise<Channel> {
  const ws = new WebSocket(channelUrl(base, nodeId), { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false, handshakeTimeout: 10_000 });
  const queue: string[] = [];
  const waiting: Array<(m: string) => void> = [];
  ws.on('message', (data) => {
    const text = data.toString();
    const w = waiting.shift();
    if (w) w(text);
    else queue.push(text);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  return new Promise((resolve, reject) => {
    ws.once('error', reject);
    ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade answered ${res.statusCode}`)));
    ws.once('open', () =>
      resolve({
        ws,
        closed,
        send: (m) => ws.send(typeof m === 'string' || Buffer.isBuffer(m) ? m : JSON.stringify(m)),
        next: () =>
          new Promise((ok, fail) => {
            const got = (text: string) => ok(JSON.parse(text) as Record<string, unknown>);
            const queued = queue.shift();
            if (queued !== undefined) return got(queued);
            waiting.push(got);
            void closed.then((c) => fail(new Error(`the channel closed (${c.code} ${c.reason}) before a message came`)));
          }),
      }),
    );
  });
}

/**
 * An upgrade request that the server is expected to refuse: its answer as a Reply. Fails if the
 * server switches protocols instead.
 */
export function refusedUpgrade(base: string, path: string, headers: Record<string, string> = {}): Promise<Reply> {
  const u = new URL(path, base);
  const all = { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-key': randomBytes(16).toString('base64'), 'sec-websocket-version': '13', ...headers };
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: 'GET', headers: all, timeout: 10_000 });
    req.once('upgrade', (_res, socket) => {
      socket.destroy();
      reject(new Error('the server switched protocols'));
    });
    req.once('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.once('end', () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode!, headers: h, text, json });
      });
    });
    req.once('timeout', () => req.destroy(new Error('no answer to the upgrade')));
    req.once('error', reject);
    req.end();
  });
}
