// comlink between threads, and the one guard every remote goes through.
//
// comlink's Node adapter has no `exports` entry and types wrongly under nodenext; one typed
// import here keeps the cast in a single place.
import * as Comlink from 'comlink';
import type { Endpoint } from 'comlink';
import type { MessagePort, Worker } from 'node:worker_threads';
import adapter from 'comlink/dist/umd/node-adapter.js';

export const nodeEndpoint = adapter as unknown as (port: MessagePort | Worker) => Endpoint;

/**
 * The calls in flight to one thread, failed together when it goes away: a comlink call over a
 * port whose other end died never settles, and one such call can wedge a loop that waits on it
 * (the supervisor's, which supervises every group).
 *
 * Not Promise.race with a promise of the thread's death: that promise settles only if the thread
 * dies, so every race would leave a reaction on it holding the call's answer for as long as the
 * thread lives (the soak saw the main heap grow by about 1 MiB a second).
 */
export class InFlight {
  private readonly pending = new Set<(err: Error) => void>();
  private gone: Error | null = null;

  /** Runs `call`, rejecting with the thread's end if it comes first. */
  run<T>(call: () => Promise<T>): Promise<T> {
    if (this.gone) return Promise.reject(this.gone);
    return new Promise<T>((resolve, reject) => {
      this.pending.add(reject);
      call()
        .then(resolve, reject)
        .finally(() => this.pending.delete(reject));
    });
  }

  /** The thread went away: every call in flight, and every later one, fails with `err`. */
  fail(err: Error): void {
    this.gone = err;
    for (const reject of this.pending) reject(err);
    this.pending.clear();
  }
}

type Methods<T> = { [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never };

/**
 * A thread's API over `endpoint`, each call guarded by `inFlight`. comlink makes (and registers) a
 * new proxy on every property access: one per method is kept instead.
 */
export function guardedRemote<T>(endpoint: Endpoint, inFlight: InFlight): Methods<T> {
  const raw = Comlink.wrap<T>(endpoint) as unknown as Record<PropertyKey, (...args: unknown[]) => Promise<unknown>>;
  const methods = new Map<PropertyKey, (...args: unknown[]) => Promise<unknown>>();
  return new Proxy({} as Methods<T>, {
    get(_, name) {
      // Not a promise: `await` on the remote must not call the thread's `then`.
      if (name === 'then') return undefined;
      let fn = methods.get(name);
      if (!fn) {
        const remote = raw[name]!;
        fn = (...args: unknown[]) => inFlight.run(() => remote(...args));
        methods.set(name, fn);
      }
      return fn;
    },
  });
}
