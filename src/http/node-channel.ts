// The node channel: a node agent's heartbeats over one WebSocket instead of one HTTP request
// each. The upgrade request (GET /as/v1/nodes/{nodeId}/events) goes through the app like any
// other, so its token, its path and its refusals are the POST's; from then on each text message
// is one event, checked like the POST body, and each answer is one message: the node's orders,
// or a problem (docs/api.md) when that event was refused. Answers keep the order of the events.
//
// Why: a heartbeat over HTTP pays for a request (headers, routing, a Koa context) that carries a
// few hundred bytes; over the channel it costs a frame. Fleets of thousands of nodes stay cheap.
import type { IncomingMessage } from 'node:http';
import type { Logger } from 'pino';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { Claims } from '../auth/tokens.js';
import type { Checker } from '../schemas/validate.js';
import type { Heartbeat } from '../schemas/heartbeat.js';
import { toProblem } from './middleware/errors.js';
import { parseJson } from './middleware/json-body.js';
import { Problem, problems } from './problem.js';
import { problemBody } from '../schemas/problem.js';
import type { Upgrade } from './server.js';

/** What the channel answers an event with; `exp` is set when `token` renews the node's token. */
export interface HeartbeatAnswer {
  reply: object;
  exp?: number;
}

export interface ChannelOptions {
  /** The heartbeat itself, as the POST route runs it; throws a Problem to refuse. */
  beat(claims: Claims, body: Heartbeat): Promise<HeartbeatAnswer>;
  event: Checker<Heartbeat>;
  /** The largest message, as the HTTP body limit. */
  maxPayload: number;
  /** A channel with no message for this long is closed (its node went FAULT long before). */
  idleMs(claims: Claims): number;
  /** Aborted when the service stops: every channel closes with 1001 (going away). */
  stopping: AbortSignal;
  /** How long a closing channel waits for its peer's close frame before dropping the socket. */
  closeGraceMs: number;
  log: Logger;
  observe(result: string): void;
  now?: () => number;
}

/** Close codes (RFC 6455 §7.4): the reason names the problem code, for the agent's log. */
export const CLOSE = { normal: 1000, goingAway: 1001, policy: 1008 } as const;

/** Events answered at most this far behind; past it the channel stops reading until it catches up. */
const MAX_QUEUED = 16;
/** Answers a peer has left unread past this: it is not reading, and its channel is dropped. */
const MAX_UNREAD_BYTES = 1 << 20;

const KEY = /^[+/0-9A-Za-z]{22}==$/;
const TOKEN_LIST = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+(?:[ \t]*,[ \t]*[!#$%&'*+.^_`|~0-9A-Za-z-]+)*$/;

export class NodeChannels {
  private readonly wss: WebSocketServer;
  private readonly now: () => number;
  /** Each node's channel: one per node, a newer one replaces the older. */
  private readonly byNode = new Map<string, WebSocket>();
  private highWater = 0;

  constructor(private readonly o: ChannelOptions) {
    this.now = o.now ?? Date.now;
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: o.maxPayload,
      perMessageDeflate: false,
      clientTracking: true,
      // One message per turn of the event loop, so that pause() stops a flood at MAX_QUEUED: by
      // default ws emits every frame of a chunk at once (thousands from one 64 KiB read).
      allowSynchronousEvents: false,
    });
    o.stopping.addEventListener('abort', () => this.closeAll(), { once: true });
  }

  /** Closes a node's channel, if it has one open (its tokens were revoked, say). */
  close(group: string, nodeId: string, reason: string): void {
    this.byNode.get(`${group}/${nodeId}`)?.close(CLOSE.policy, reason);
  }

  /** Open channels. */
  get size(): number {
    return this.wss.clients.size;
  }

  /** The most events any channel has had read and not yet answered (bounded by MAX_QUEUED). */
  get backlogHighWater(): number {
    return this.highWater;
  }

  /**
   * Takes over an authorised upgrade request. Throws the problem to answer instead when the
   * request is not a WebSocket handshake this server can complete.
   */
  accept(req: IncomingMessage, upgrade: Upgrade | undefined, claims: Claims, requestId: string): void {
    if (!upgrade || req.headers.upgrade?.toLowerCase() !== 'websocket') {
      throw new Problem(426, 'UPGRADE_REQUIRED', 'this resource is a WebSocket: send the request with "Upgrade: websocket" (or POST one event)', {
        headers: { Upgrade: 'websocket', Connection: 'Upgrade' },
      });
    }
    const key = req.headers['sec-websocket-key'];
    const version = req.headers['sec-websocket-version'];
    const protocols = req.headers['sec-websocket-protocol'];
    // Checked here, as the library would, so that a bad handshake gets a problem, not its bare 400.
    if (typeof key !== 'string' || !KEY.test(key)) throw new Problem(400, 'BAD_REQUEST', 'Sec-WebSocket-Key must be 16 bytes in base64 (RFC 6455 §4.1)');
    if (protocols !== undefined && (!TOKEN_LIST.test(protocols) || new Set(protocols.split(/[ \t]*,[ \t]*/)).size !== protocols.split(',').length)) {
      throw new Problem(400, 'BAD_REQUEST', 'Sec-WebSocket-Protocol must be a comma-separated list of distinct tokens');
    }
    if (version !== '13' && version !== '8') throw new Problem(426, 'UPGRADE_REQUIRED', 'only WebSocket version 13 is supported', { headers: { 'Sec-WebSocket-Version': '13' } });
    // RFC 6455 §4.1: the opening handshake is a GET (ws would answer anything else with its own HTML).
    if (req.method !== 'GET') throw new Problem(405, 'METHOD_NOT_ALLOWED', `a node channel opens with GET, not ${String(req.method).slice(0, 20)}`, { headers: { Allow: 'GET, POST' } });
    if (this.o.stopping.aborted) throw problems.notReady();
    // The response object Koa was given will never be written: the socket is the channel's now.
    upgrade.res.detachSocket(upgrade.socket as never);
    this.wss.handleUpgrade(req, upgrade.socket, upgrade.head, (ws) => this.serve(ws, claims, requestId));
  }

  /** `requestId` is the upgrade's: a 5xx answer carries it, as every 5xx does (docs/api.md). */
  private serve(ws: WebSocket, claims: Claims, requestId: string): void {
    // The claims the next event is checked against: replaced (not copied per message) when an
    // answer renews the node's token.
    let current = claims;
    let queued = 0;
    let tail: Promise<void> = Promise.resolve();
    const node = `${claims.nodeGroup}/${claims.nodeId}`;
    // One agent per node: a reconnect (or a copy of the node running twice) takes the channel over.
    this.byNode.get(node)?.close(CLOSE.policy, 'REPLACED');
    this.byNode.set(node, ws);
    const idle = setTimeout(() => ws.close(CLOSE.normal, 'IDLE'), this.o.idleMs(claims));
    ws.on('close', () => {
      clearTimeout(idle);
      if (this.byNode.get(node) === ws) this.byNode.delete(node);
    });
    ws.on('error', (err) => this.o.log.debug({ err, nodeId: claims.nodeId }, 'node channel error'));
    ws.on('message', (data, isBinary) => {
      idle.refresh();
      if (++queued >= MAX_QUEUED) ws.pause();
      if (queued > this.highWater) this.highWater = queued;
      tail = tail
        .then(() => this.answer(data, isBinary, current, requestId))
        .then(({ text, close, renewed }) => {
          if (renewed !== undefined) current = { ...claims, exp: renewed };
          if (ws.readyState !== ws.OPEN) return;
          if (ws.bufferedAmount > MAX_UNREAD_BYTES) {
            this.o.log.warn({ nodeId: claims.nodeId, unread: ws.bufferedAmount }, 'node channel dropped: its peer does not read its answers');
            ws.terminate();
            return;
          }
          ws.send(text);
          if (close) ws.close(CLOSE.policy, close);
        })
        .finally(() => {
          if (--queued < MAX_QUEUED / 2 && ws.isPaused) ws.resume();
        });
    });
  }

  private async answer(data: RawData, isBinary: boolean, claims: Claims, requestId: string): Promise<{ text: string; close?: string; renewed?: number }> {
    try {
      if (claims.exp * 1000 <= this.now()) throw problems.badToken('the token has expired; open the channel again with the token from the last reply', 'TOKEN_EXPIRED');
      if (isBinary) throw new Problem(415, 'UNSUPPORTED_MEDIA_TYPE', 'a node channel message must be text: one JSON event');
      const raw = parseJson(data.toString(), 'message');
      const body = this.o.event.withDefaults(raw);
      if (!this.o.event.check(body)) throw problems.validation(this.o.event.explain(body, 'message'));
      const { reply, exp } = await this.o.beat(claims, body);
      this.o.observe('ok');
      return { text: JSON.stringify(reply), ...(exp !== undefined ? { renewed: exp } : {}) };
    } catch (err) {
      const problem = toProblem(err);
      this.o.observe(problem.code);
      if (problem.code === 'INTERNAL') this.o.log.error({ err, reqId: requestId, nodeId: claims.nodeId }, 'node channel event failed');
      // A node the group no longer knows, or a token past its life, has no use for the channel.
      const close = problem.status === 401 || problem.code === 'NODE_NOT_FOUND' ? problem.code : undefined;
      return { text: JSON.stringify(problemBody(problem, problem.status >= 500 ? requestId : undefined)), ...(close ? { close } : {}) };
    }
  }

  private closeAll(): void {
    for (const ws of this.wss.clients) {
      ws.close(CLOSE.goingAway, 'STOPPING');
      setTimeout(() => ws.terminate(), this.o.closeGraceMs).unref();
    }
  }
}
