// The event stream (GET /as/v1/events, Server-Sent Events) read with fetch: `events tail`, and the
// live progress of long operations (nodes coming INSERVICE, a group draining, Terraform applies).
// A stream cut by the network or a restart is resumed with Last-Event-ID, so nothing is skipped.
import type { EventRecord } from '../domain/events.js';
import { sseBlocks } from '../events/stream-client.js';
import { CliError, EXIT, failureBody, refused, unreachable } from './api.js';
import type { Context } from './context.js';

type Frame = { kind: 'event'; event: EventRecord } | { kind: 'hello'; last: number };

/** Reads frames from one connection; ends when the body ends. */
async function* frames(body: AsyncIterable<Uint8Array>): AsyncGenerator<Frame> {
  for await (const block of sseBlocks(body)) {
    const hello = /^: switchyard events, last id ([0-9]+)/.exec(block);
    if (hello) yield { kind: 'hello', last: Number(hello[1]) };
    const data = block.split('\n').find((l) => l.startsWith('data: '));
    if (data) yield { kind: 'event', event: JSON.parse(data.slice(6)) as EventRecord };
  }
}

export interface FollowOptions {
  since?: number;
  types?: string;
  signal: AbortSignal;
  /** Called on each (re)connection with the log's last id at that moment. */
  onConnect?: (last: number) => void;
  /** Called when a connection is lost (it is then resumed). */
  onDisconnect?: () => void;
}

/** Every event from `since` (or from now), reconnecting after a cut with the last id seen. */
export async function* follow(ctx: Context, options: FollowOptions): AsyncGenerator<EventRecord> {
  let lastSeen = options.since;
  let backoff = 250;
  for (;;) {
    const query = new URLSearchParams();
    if (options.types) query.set('types', options.types);
    if (lastSeen !== undefined) query.set('since', String(lastSeen));
    const path = `/as/v1/events${query.size ? `?${query}` : ''}`;
    let res: Response;
    try {
      res = await fetch(ctx.url + path, { headers: { authorization: `Bearer ${ctx.token()}`, accept: 'text/event-stream' }, signal: options.signal });
    } catch (err) {
      if (options.signal.aborted) return;
      if (err instanceof CliError) throw err;
      options.onDisconnect?.();
      if (backoff === 250 && lastSeen === options.since) throw unreachable(ctx.url, err);
      ctx.progress(`(event stream: ${unreachable(ctx.url, err).message}; retrying)`);
      await pause(backoff, options.signal);
      backoff = Math.min(backoff * 2, 5000);
      continue;
    }
    if (!res.ok || !res.body) {
      const body = await failureBody(res);
      if (res.status === 429 || res.status === 503) {
        ctx.progress(`(event stream: ${res.status}; retrying)`);
        await pause(Math.max(backoff, 1000), options.signal);
        backoff = Math.min(backoff * 2, 5000);
        continue;
      }
      throw refused('GET', path, res.status, body);
    }
    backoff = 250;
    try {
      for await (const f of frames(res.body as unknown as AsyncIterable<Uint8Array>)) {
        if (f.kind === 'hello') {
          options.onConnect?.(f.last);
          // From now on, a reconnection resumes where this stream was.
          lastSeen ??= f.last;
          continue;
        }
        lastSeen = f.event.seq;
        yield f.event;
      }
    } catch (err) {
      if (options.signal.aborted) return;
      if (!(err instanceof TypeError) && (err as Error).name !== 'AbortError' && !(err as { code?: string }).code) throw err;
    }
    if (options.signal.aborted) return;
    options.onDisconnect?.();
    ctx.progress('(event stream ended; resuming)');
    await pause(backoff, options.signal);
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/** One line per event, for people. */
export function describe(e: EventRecord): string {
  const time = new Date(e.at).toISOString().replace(/\.[0-9]+Z$/, 'Z');
  const where = 'group' in e ? e.group : '';
  let what: string;
  switch (e.type) {
    case 'node.state':
      what = `${e.nodeId} ${e.from ?? 'new'} → ${e.to ?? 'removed'}${e.reason ? ` (${e.reason})` : ''}`;
      break;
    case 'node.parent':
      what = `${e.nodeId} parent ${e.parent ?? 'none'} (${e.reason})`;
      break;
    case 'scaling.action':
      what = `${e.action} ${e.count} ${e.role} in ${e.region} (${e.trigger}: ${e.reason})${e.values ? ` ${JSON.stringify(e.values)}` : ''}`;
      break;
    case 'scaling.blocked':
      what = `${e.role} in ${e.region}: ${e.cause}: ${e.reason}`;
      break;
    case 'platform.progress':
      what = `${e.operation} ${e.phase}${e.nodeId ? ` ${e.nodeId}` : ''}${e.resource ? ` ${e.resource}` : ''}${e.action ? ` ${e.action}` : ''}${e.message ? `: ${e.message}` : ''}`;
      break;
    case 'platform.error':
      what = `${e.operation}${e.nodeId ? ` ${e.nodeId}` : ''}: ${e.message}`;
      break;
    case 'nodegroup.changed':
      what = e.change;
      break;
    default: {
      const { seq: _s, at: _a, type: _t, group: _g, ...rest } = e as EventRecord & { group?: string };
      what = JSON.stringify(rest);
    }
  }
  return `${time}  #${e.seq}  ${e.type.padEnd(17)} ${where ? `${where}  ` : ''}${what}`;
}

/**
 * Runs `action` with the group's events followed from before it starts (so none of its effects
 * is missed), shows them as progress, and waits until `done` holds: checked at once, after each
 * event, and every 2 s. `done` is told whether the stream is connected: while it is, a command
 * ends on the event that says its operation finished (so that event is shown before it returns);
 * while it is not, on what the API says. Past `timeoutMs`, exit 5; the operation goes on.
 */
export async function watch<T>(
  ctx: Context,
  options: { group: string; what: string; timeoutMs: number; show?: (e: EventRecord) => boolean },
  action: () => Promise<T>,
  done: (result: T, stream: { connected: boolean }) => Promise<boolean>,
): Promise<T> {
  const controller = new AbortController();
  let connected!: () => void;
  const ready = new Promise<void>((r) => (connected = r));
  let wake: () => void = () => {};
  const state = { connected: false };
  const onConnect = () => {
    state.connected = true;
    connected();
  };
  const onDisconnect = () => {
    state.connected = false;
  };
  const stream = (async () => {
    for await (const e of follow(ctx, { signal: controller.signal, onConnect, onDisconnect })) {
      if (!('group' in e) || e.group !== options.group) continue;
      if (options.show?.(e) ?? true) ctx.progress(describe(e));
      wake();
    }
  })();
  stream.catch(() => {
    state.connected = false;
    connected();
  });
  try {
    await Promise.race([ready, stream]);
    const result = await action();
    const deadline = ctx.now() + options.timeoutMs;
    for (;;) {
      if (await done(result, state)) return result;
      const left = deadline - ctx.now();
      if (left <= 0) throw new CliError(`gave up waiting for ${options.what} after ${Math.round(options.timeoutMs / 1000)} s; it goes on in the service (switchyard events tail)`, EXIT.timeout);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(2000, left));
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    controller.abort();
    await stream.catch(() => {});
  }
}
