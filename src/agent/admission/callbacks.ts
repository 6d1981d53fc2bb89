// Where nginx-rtmp asks this node's agent whether a client may publish or play (its on_publish
// and on_play notifications: docs/security.md, "Who may publish and play"). A small HTTP server
// on 127.0.0.1 only: nginx POSTs the connection's details as a form (`name`, `app`, the stream
// URL's query such as `token`, and `pageurl`, where an edge's pull carries its relay credential);
// 2xx admits, anything else makes nginx refuse the client. Every field is hostile: the body is
// bounded, names are checked, and the gate decides.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AdmissionGate } from './gate.js';

const MAX_BODY = 16 * 1024;

export interface CallbackOptions {
  gate: AdmissionGate;
  /** The application clients name (the group's scope): any other is refused. */
  scope: string;
  /**
   * Edges and relays: the parent this node pulls from, as nginx-rtmp names it in the notification
   * of a pull's local publish (`host:port/scope`); null without a parent.
   */
  pullingFrom?: () => string | null;
  log(msg: string, extra?: Record<string, unknown>): void;
}

export class AdmissionCallbacks {
  private server: Server | null = null;
  port = 0;
  /** Refusals logged in the current second: a storm of bad clients must not flood the log. */
  private logged = { second: 0, count: 0 };

  constructor(private readonly o: CallbackOptions) {}

  async start(): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res));
    server.headersTimeout = 5000;
    server.requestTimeout = 5000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    this.server = server;
    this.port = (server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
    this.server?.closeAllConnections();
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const answer = (status: number) => {
      res.writeHead(status, { 'content-type': 'text/plain' });
      res.end();
    };
    const action = req.url === '/on_publish' ? 'publish' : req.url === '/on_play' ? 'play' : null;
    if (req.method !== 'POST' || action === null) return answer(404);
    let body: string;
    try {
      body = await readBody(req);
    } catch {
      return answer(413);
    }
    const form = new URLSearchParams(body);
    const stream = form.get('name') ?? '';
    // A pull from the parent enters this node as a publish of its own: nginx-rtmp notifies it with
    // no application, the flash version ngx-local-relay and the pull's URL as the address, none of
    // which a client connection can have (its address is its IP, its application the scope).
    if (action === 'publish' && form.get('flashver') === 'ngx-local-relay' && form.get('app') === '') {
      const parent = this.o.pullingFrom?.() ?? null;
      if (parent !== null && form.get('addr') === parent) return answer(200);
      return this.refuse(res, action, stream, `a relay publish from ${form.get('addr') ?? '?'}, which is not this node's parent`);
    }
    if (form.get('app') !== this.o.scope) return this.refuse(res, action, stream, `no application '${form.get('app') ?? ''}' here`);
    // A client's token rides in its URL's query; a pulling node's credential in its pageUrl.
    const token = form.get('token') || (action === 'play' ? form.get('pageurl') : null) || null;
    const verdict = this.o.gate.check(action, stream, token);
    if (!verdict.ok) return this.refuse(res, action, stream, verdict.reason);
    answer(200);
  }

  private refuse(res: ServerResponse, action: string, stream: string, reason: string): void {
    res.writeHead(403, { 'content-type': 'text/plain' });
    res.end();
    const second = Math.floor(Date.now() / 1000);
    if (second !== this.logged.second) this.logged = { second, count: 0 };
    if (++this.logged.count <= 10) this.o.log('admission refused', { action, stream: stream.slice(0, 128), reason });
  }
}

/** The body, up to MAX_BODY; past it the rest is read and dropped (the answer is 413), within the server's request timeout. */
function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= MAX_BODY) chunks.push(c);
    });
    req.on('end', () => (size > MAX_BODY ? reject(new Error('too large')) : resolve(Buffer.concat(chunks).toString('latin1'))));
    req.on('error', reject);
  });
}
