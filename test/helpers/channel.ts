// A node channel (a WebSocket, src/http/node-channel.ts) for tests: messages as a queue to await,
// and upgrade attempts whose refusals are read as ordinary HTTP answers.
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { channelUrl } from '../../src/agent/heartbeats.js';
import { rawRequest, replyOf, type Reply } from './http.js';

export interface Channel {
  ws: WebSocket;
  send(message: unknown): void;
  /** The next message, parsed. */
  next(): Promise<Record<string, unknown>>;
  /** Resolves when the channel closes, with the code and reason the server gave. */
  closed: Promise<{ code: number; reason: string }>;
}

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
export async function refusedUpgrade(base: string, path: string, headers: Record<string, string> = {}): Promise<Reply> {
  const all = { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-key': randomBytes(16).toString('base64'), 'sec-websocket-version': '13', ...headers };
  const r = await rawRequest(base, { method: 'GET', path, headers: all });
  if (r.status === 101) throw new Error('the server switched protocols');
  const h = new Headers();
  for (const [k, v] of Object.entries(r.headers)) if (typeof v === 'string') h.set(k, v);
  return replyOf(r.status, h, r.text);
}
