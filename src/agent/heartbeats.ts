// How the agent delivers its events (docs/nodes.md): one POST each, or over a node channel (one
// WebSocket for all of them, src/http/node-channel.ts), which costs the control plane a frame
// instead of a request. The channel is the default; an agent falls back to POSTs when the control
// plane does not offer it (an older one), and tries the channel again later.
import WebSocket from 'ws';
import type { HeartbeatReply } from '../schemas/heartbeat.js';

export type Reply = HeartbeatReply;

/** What became of one event: the node's orders, or the control plane's refusal (a problem). */
export type Outcome = { ok: true; reply: Reply } | { ok: false; status: number; body: string };

export interface Heartbeats {
  readonly name: string;
  /** Throws when the control plane cannot be reached (the agent keeps serving and retries). */
  send(event: object, token: string, timeoutMs: number): Promise<Outcome>;
  close(): void;
}

export const TRANSPORTS = ['channel', 'post'] as const;
export type TransportName = (typeof TRANSPORTS)[number];

export function heartbeats(name: TransportName, url: string, nodeId: string): Heartbeats {
  const post = new PostHeartbeats(url, nodeId);
  return name === 'post' ? post : new ChannelHeartbeats(url, nodeId, post);
}

const eventsPath = (nodeId: string) => `/as/v1/nodes/${encodeURIComponent(nodeId)}/events`;

/** Where a node's channel opens: its events resource, over ws: or wss:. */
export const channelUrl = (base: string, nodeId: string): string => base.replace(/^http/, 'ws') + eventsPath(nodeId);

export class PostHeartbeats implements Heartbeats {
  readonly name = 'post';

  constructor(
    private readonly url: string,
    private readonly nodeId: string,
  ) {}

  async send(event: object, token: string, timeoutMs: number): Promise<Outcome> {
    const res = await fetch(this.url + eventsPath(this.nodeId), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(event),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (res.ok) return { ok: true, reply: (await res.json()) as Reply };
    return { ok: false, status: res.status, body: await res.text() };
  }

  close(): void {}
}

/** After the control plane declined the channel (not a refusal of the node): POSTs this long. */
const DECLINED_RETRY_MS = 60_000;

export class ChannelHeartbeats implements Heartbeats {
  private ws: WebSocket | null = null;
  private declinedUntil = 0;
  private waiting: ((text: string) => void) | null = null;
  private lost: ((err: Error) => void) | null = null;

  constructor(
    private readonly url: string,
    private readonly nodeId: string,
    private readonly fallback: PostHeartbeats,
    private readonly now: () => number = Date.now,
  ) {}

  get name(): string {
    return this.ws ? 'channel' : 'post';
  }

  async send(event: object, token: string, timeoutMs: number): Promise<Outcome> {
    if (!this.ws) {
      if (this.now() < this.declinedUntil) return this.fallback.send(event, token, timeoutMs);
      const opened = await this.open(token, timeoutMs);
      if (opened === 'declined') return this.fallback.send(event, token, timeoutMs);
      if (opened !== 'open') return opened;
    }
    const ws = this.ws!;
    const text = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => {
        ws.terminate();
        reject(new Error(`no answer on the node channel within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting = (t) => {
        clearTimeout(timer);
        resolve(t);
      };
      this.lost = (err) => {
        clearTimeout(timer);
        reject(err);
      };
      ws.send(JSON.stringify(event));
    });
    const message = JSON.parse(text) as Reply | { status: number; code: string };
    if ('status' in message && 'code' in message) return { ok: false, status: message.status, body: text };
    return { ok: true, reply: message as Reply };
  }

  /** 'open', 'declined' (use POSTs for now), or the refusal of this node's token or id. */
  private open(token: string, timeoutMs: number): Promise<'open' | 'declined' | Outcome> {
    const ws = new WebSocket(channelUrl(this.url, this.nodeId), { headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false, handshakeTimeout: timeoutMs });
    return new Promise((resolve, reject) => {
      ws.once('open', () => {
        this.ws = ws;
        ws.on('message', (data) => {
          const w = this.waiting;
          this.waiting = this.lost = null;
          w?.(data.toString());
        });
        ws.once('close', (code, reason) => {
          if (this.ws === ws) this.ws = null;
          const l = this.lost;
          this.waiting = this.lost = null;
          l?.(new Error(`the node channel closed: ${code} ${reason.toString()}`));
        });
        resolve('open');
      });
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.once('end', () => {
          ws.terminate();
          const status = res.statusCode ?? 0;
          const refused = status === 401 || status === 403 || (status === 404 && body.includes('"NODE_NOT_FOUND"'));
          // A refusal of this node, or a control plane that cannot serve now (503 while it
          // stops): answered as the POST would be, and the channel asked for again next time.
          if (refused || status >= 500) return resolve({ ok: false, status, body });
          // Not offered here (an older control plane, a proxy that does not pass upgrades).
          this.declinedUntil = this.now() + DECLINED_RETRY_MS;
          resolve('declined');
        });
      });
      // For the channel's whole life: an error ends it (the next event opens another).
      ws.on('error', (err) => {
        ws.terminate();
        reject(err);
      });
    });
  }

  close(): void {
    this.ws?.close(1000, 'STOPPING');
    this.ws = null;
  }
}
