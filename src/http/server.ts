// The HTTP servers Koa runs in. Node's own parser answers some requests before Koa sees them
// (malformed HTTP, oversized headers, slow clients, an `Expect` it cannot meet): those answers
// are problems too, with the same security headers as every other answer.
import { createServer as createHttpServer, STATUS_CODES, ServerResponse, type IncomingMessage, type Server } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { timeOutBodyRead } from './middleware/json-body.js';
import { securityHeaders } from './middleware/security-headers.js';
import { Problem } from './problem.js';
import { PROBLEM_CONTENT_TYPE, problemJson } from '../schemas/problem.js';

export interface ServerLimits {
  /** The whole request (headers and body) must arrive within this many ms. */
  requestTimeout: number;
  /** The headers must arrive within this many ms. */
  headersTimeout: number;
  tls?: { cert: Buffer; key: Buffer };
}

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** The headers of a problem Koa does not write: ours, and a connection closed after it. */
function problemHeaders(headers: Record<string, string>, payload: string): Record<string, string> {
  return { ...headers, 'Content-Type': PROBLEM_CONTENT_TYPE, 'Content-Length': String(Buffer.byteLength(payload)), Connection: 'close' };
}

/** A problem written on a response Koa never saw; a HEAD request's has no body (its client reads none). */
function answerProblem(res: ServerResponse, problem: Problem, headers: Record<string, string>, head: boolean, then?: () => void): void {
  const payload = problemJson(problem);
  res.writeHead(problem.status, problemHeaders(headers, payload));
  res.end(head ? undefined : payload, then);
}

/** A problem written straight to the socket, where Node has no response to write it on. */
function rawAnswer(socket: Duplex, problem: Problem, headers: Record<string, string>, head: boolean): void {
  const payload = problemJson(problem);
  const lines = Object.entries(problemHeaders(headers, payload)).map(([name, value]) => `${name}: ${value}\r\n`);
  socket.end(`HTTP/1.1 ${problem.status} ${STATUS_CODES[problem.status]}\r\n${lines.join('')}\r\n${head ? '' : payload}`);
}

/** Sockets with no request in flight, for a drain: idle keep-alives and ones that never asked. */
const inFlight = new WeakMap<Server, Map<Duplex, number>>();

/** An upgrade request's connection and the bytes that came after its headers. */
export interface Upgrade {
  socket: Duplex;
  head: Buffer;
  res: ServerResponse;
}

const upgrades = new WeakMap<IncomingMessage, Upgrade>();

/** The connection of an upgrade request, for the route that takes it over (the node channel). */
export function upgradeOf(req: IncomingMessage): Upgrade | undefined {
  return upgrades.get(req);
}

export function closeUnusedConnections(server: Server): void {
  for (const [socket, n] of inFlight.get(server) ?? []) if (n === 0) socket.destroy();
}

/** How long a connection whose answer is written may still send what it had to send before it is cut. */
const LINGER_MS = 2000;

/**
 * Closes a connection once its answer is written, without losing the answer. A client may still
 * be sending (a body after an upgrade request: Node's parser reads none of it), and closing a
 * socket with bytes unread makes the kernel reset the connection, which can discard the answer
 * before the client reads it (the fuzz test found a GET with `Connection: Upgrade` and a 170 kB
 * body answered, then reset). So: half-close, read and drop what still comes, close when the
 * client does or after LINGER_MS (nginx's lingering close).
 */
function lingeringClose(socket: Socket): void {
  socket.end();
  socket.resume();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once('end', () => socket.destroy());
  socket.once('close', () => clearTimeout(timer));
}

export function createServer(handler: Handler, limits: ServerLimits): Server {
  const headers = securityHeaders(limits.tls !== undefined);
  const options = {
    requestTimeout: limits.requestTimeout,
    headersTimeout: limits.headersTimeout,
    // Node looks for overdue requests only this often (30 s by default): a slow client would
    // otherwise hold its socket long past the timeouts above.
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(limits.headersTimeout / 4))),
    keepAliveTimeout: 5000,
    // Checked below, so that the refusal is a problem with our headers, not Node's bare 400.
    requireHostHeader: false,
  };
  const guarded: Handler = (req, res) => {
    // RFC 9112 §3.2: an HTTP/1.1 request without Host is refused.
    if (req.headers.host === undefined && req.httpVersion === '1.1') {
      answerProblem(res, new Problem(400, 'BAD_REQUEST', 'an HTTP/1.1 request needs a Host header'), headers, req.method === 'HEAD');
      return;
    }
    handler(req, res);
  };
  // A TLS handshake that never finishes holds a socket no request timeout sees (Node waits
  // 120 s by default, past any shutdown deadline): it gets as long as the headers would.
  const server = (limits.tls ? createHttpsServer({ ...options, handshakeTimeout: limits.headersTimeout, ...limits.tls }, guarded) : createHttpServer(options, guarded)) as Server;
  const sockets = new Map<Duplex, number>();
  inFlight.set(server, sockets);
  server.on(limits.tls ? 'secureConnection' : 'connection', (socket: Duplex) => {
    sockets.set(socket, 0);
    socket.once('close', () => sockets.delete(socket));
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    sockets.set(socket, (sockets.get(socket) ?? 0) + 1);
    res.once('close', () => {
      if (sockets.has(socket)) sockets.set(socket, sockets.get(socket)! - 1);
    });
  });

  // An upgrade request goes through the app like any other (authentication, validation, problem
  // answers, logs, metrics). A route that takes the connection over finds it with upgradeOf();
  // any other answer is written as usual and then the connection closes: Node's parser has let
  // go of it, so it cannot carry another request. It counts as in flight, so that a drain leaves
  // it to its owner (the node channel closes its own on shutdown).
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    sockets.set(socket, (sockets.get(socket) ?? 0) + 1);
    const res = new ServerResponse(req);
    res.shouldKeepAlive = false;
    res.assignSocket(socket as Socket);
    res.once('finish', () => lingeringClose(socket as Socket));
    upgrades.set(req, { socket, head, res });
    guarded(req, res);
  });

  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const timeout = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    const pending = (socket as { _httpMessage?: ServerResponse })._httpMessage;
    // A TLS handshake that failed or timed out cannot carry an HTTP answer (one would wait for it).
    const tlsFailure = /^ERR_(TLS|SSL)_/.test(err.code ?? '');
    if (tlsFailure || !socket.writable || (pending && (pending.headersSent || !timeout))) {
      socket.destroy();
      return;
    }
    if (pending) {
      // Koa has the request and waits for its body: the route answers the 408 itself.
      if (timeOutBodyRead(pending.req)) return;
      answerProblem(pending, new Problem(408, 'REQUEST_TIMEOUT', 'the request took too long to arrive'), headers, false, () => socket.destroy());
      return;
    }
    const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
    const problem = timeout
      ? new Problem(408, 'REQUEST_TIMEOUT', 'the request took too long to arrive')
      : tooLarge
        ? new Problem(431, 'HEADERS_TOO_LARGE', 'the request headers are too large')
        : new Problem(400, 'BAD_REQUEST', 'the request is not valid HTTP');
    const head = (err as { rawPacket?: Buffer }).rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
    rawAnswer(socket, problem, headers, head);
  });

  // CONNECT (a proxy's method): without a listener Node would drop the socket without a word.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    rawAnswer(socket, new Problem(405, 'METHOD_NOT_ALLOWED', 'CONNECT is not allowed: this is not a proxy'), headers, false);
  });

  // Only `Expect: 100-continue` is understood; Node answers anything else with a bare 417.
  server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    answerProblem(res, new Problem(417, 'EXPECTATION_FAILED', 'only "Expect: 100-continue" is supported'), headers, false);
  });
  return server;
}
