// The CLI's client of the public REST API (docs/api.md): one request at a time with fetch, the
// token of the session, and every failure turned into an exit code (docs/cli.md):
//   0 done, 1 the service answered with a failure, 2 a usage error, 3 the service could not be
//   reached, 4 not authorised (no, expired or refused token; a password change required),
//   5 gave up waiting for a long operation (--timeout).

export const EXIT = { ok: 0, failed: 1, usage: 2, unreachable: 3, unauthorised: 4, timeout: 5 } as const;

export interface Problem {
  status: number;
  code?: string;
  detail?: string;
  errors?: Array<{ path: string; message: string }>;
  [key: string]: unknown;
}

/** Ends the command with an exit code; `json` is what `--json` prints on stdout (the API's own problem). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
    readonly json?: unknown,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usage = (message: string) => new CliError(message, EXIT.usage);

export interface Reply<T> {
  status: number;
  headers: Headers;
  body: T;
}

export class Api {
  constructor(
    readonly url: string,
    private readonly token: () => string,
    private readonly timeoutMs = 30_000,
  ) {}

  /** GET, POST, … under the service's URL; any answer but 2xx is a CliError with its exit code. */
  async call<T = unknown>(method: string, path: string, options: { body?: unknown; auth?: boolean; accept?: number[] } = {}): Promise<Reply<T>> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (options.auth !== false) headers.authorization = `Bearer ${this.token()}`;
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(this.url + path, {
        method,
        headers,
        ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      throw unreachable(this.url, err);
    }
    const text = await res.text();
    let body: unknown = text;
    if (text && /json/.test(res.headers.get('content-type') ?? '')) {
      try {
        body = JSON.parse(text);
      } catch {
        /* shown as text */
      }
    }
    if (res.ok || options.accept?.includes(res.status)) return { status: res.status, headers: res.headers, body: body as T };
    throw refused(method, path, res.status, body, res.headers.get('retry-after'));
  }

  get = <T = unknown>(path: string) => this.call<T>('GET', path);
}

/** A failure answer's body: its JSON (a problem) when it is JSON, else its text. */
export async function failureBody(res: Response): Promise<unknown> {
  const text = await res.text();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** A network failure, in words: what the operator should check. */
export function unreachable(url: string, err: unknown): CliError {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  const code = e.cause?.code ?? (e.name === 'TimeoutError' ? 'a timeout' : undefined);
  const why = code === 'ECONNREFUSED' ? 'connection refused: is the service running? (switchyard serve)' : code === 'ENOTFOUND' ? 'no such host' : (code ?? e.cause?.message ?? e.message);
  return new CliError(`cannot reach ${url}: ${why}`, EXIT.unreachable);
}

/** A service's failure answer: the problem's code and detail, each bad field, and a hint where one helps. */
export function refused(method: string, path: string, status: number, body: unknown, retryAfter: string | null = null): CliError {
  const p = (typeof body === 'object' && body !== null ? body : { status, detail: String(body).slice(0, 500) }) as Problem;
  const lines = [`${method} ${path}: ${status}${p.code ? ` ${p.code}` : ''}${p.detail ? `: ${p.detail}` : ''}`];
  for (const e of p.errors ?? []) lines.push(`  ${e.path}: ${e.message}`);
  if (status === 401) lines.push('  log in again: switchyard login');
  if (p.code === 'PASSWORD_CHANGE_REQUIRED') lines.push('  change the initial password first: switchyard password');
  if ((status === 503 || status === 429) && retryAfter) lines.push(`  retry in ${retryAfter} s`);
  return new CliError(lines.join('\n'), status === 401 || status === 403 ? EXIT.unauthorised : EXIT.failed, p);
}

/** A path segment: names are checked by the service, but never allowed to change the path here. */
export const seg = (value: string) => encodeURIComponent(value);
