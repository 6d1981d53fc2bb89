// One autocannon run, reduced to the figures the tables show.
import autocannon from 'autocannon';

export interface LoadResult {
  label: string;
  connections: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

export interface LoadOptions {
  url: string;
  path: string;
  connections: number;
  seconds: number;
  headers?: Record<string, string>;
  /** A fresh path per request (for example a new stream name), instead of `path`. */
  nextPath?: () => string;
  method?: 'GET' | 'POST';
  body?: () => string;
}

export async function load(label: string, o: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: o.url,
    connections: o.connections,
    duration: o.seconds,
    headers: o.headers ?? {},
    requests: [
      {
        method: o.method ?? 'GET',
        path: o.path,
        ...(o.nextPath || o.body
          ? {
              setupRequest: (req: Record<string, unknown>) => ({ ...req, ...(o.nextPath ? { path: o.nextPath() } : {}), ...(o.body ? { body: o.body() } : {}) }),
            }
          : {}),
      } as autocannon.Request,
    ],
  });
  return {
    label,
    connections: o.connections,
    rps: Math.round(result.requests.average),
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
  };
}
