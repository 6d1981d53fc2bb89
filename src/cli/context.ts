// What every command works with: the service's URL, the session's token, --json and --quiet, and
// the node group a command is about when it does not say.
import { Api, CliError, EXIT, seg, usage } from './api.js';
import { readSaved, serviceUrl, tokenFile, type Saved } from './credentials.js';
import type { Parsed } from './command.js';
import { json, note } from './table.js';

export class Context {
  readonly jsonOut: boolean;
  readonly quiet: boolean;
  readonly file: string;
  private savedCache: Saved | null | undefined;
  private urlCache: string | undefined;

  constructor(
    readonly parsed: Parsed,
    readonly env: NodeJS.ProcessEnv = process.env,
    readonly now: () => number = Date.now,
  ) {
    this.jsonOut = parsed.values.json === true;
    this.quiet = parsed.values.quiet === true;
    this.file = tokenFile(env);
  }

  get saved(): Saved | null {
    if (this.savedCache === undefined) this.savedCache = readSaved(this.file);
    return this.savedCache;
  }

  get url(): string {
    this.urlCache ??= serviceUrl(this.parsed.values.url as string | undefined, this.env, this.saved);
    return this.urlCache;
  }

  /** The token: SWITCHYARD_TOKEN, else the one `switchyard login` saved for this very URL. */
  token(): string {
    if (this.env.SWITCHYARD_TOKEN) return this.env.SWITCHYARD_TOKEN;
    const saved = this.saved;
    if (!saved) throw new CliError(`not logged in: switchyard login${this.parsed.values.url ? ` --url ${this.url}` : ''} (or set SWITCHYARD_TOKEN)`, EXIT.unauthorised);
    if (saved.url !== this.url) throw new CliError(`logged in to ${saved.url}, not to ${this.url}: switchyard login --url ${this.url}`, EXIT.unauthorised);
    if (saved.expiresAt <= this.now()) throw new CliError(`the token of ${saved.user} at ${saved.url} expired at ${new Date(saved.expiresAt).toISOString()}: switchyard login`, EXIT.unauthorised);
    return saved.token;
  }

  get api(): Api {
    return new Api(this.url, () => this.token());
  }

  /** Prints the API's JSON with --json, else what `human` writes. */
  show(body: unknown, human: () => void): void {
    if (this.jsonOut) json(body);
    else human();
  }

  progress(line: string): void {
    if (!this.quiet) note(line);
  }

  /** --group, else SWITCHYARD_GROUP, else the service's only node group. */
  async group(): Promise<string> {
    const flag = (this.parsed.values.group as string | undefined) ?? (this.env.SWITCHYARD_GROUP || undefined);
    if (flag) return flag;
    const groups = (await this.api.get<Array<{ name: string }>>('/as/v1/nodegroups?limit=1000')).body;
    if (groups.length === 1) return groups[0]!.name;
    throw usage(groups.length === 0 ? 'the service has no node group' : `say which node group with --group (or SWITCHYARD_GROUP): ${groups.map((g) => g.name).join(', ')}`);
  }

  groupPath(group: string, ...rest: string[]): string {
    return ['/as/v1/nodegroups', group, ...rest].map((p, i) => (i === 0 ? p : seg(p))).join('/');
  }
}

export const GROUP_OPTION = { group: { type: 'string', short: 'g', value: 'GROUP', description: 'the node group (default: SWITCHYARD_GROUP, else the only one)' } } as const;

export const WAIT_OPTIONS = {
  'no-wait': { type: 'boolean', description: 'return once the service has accepted it' },
  timeout: { type: 'string', value: 'DURATION', description: 'give up waiting after this long (exit 5): 90s, 10m (default 10m)' },
} as const;

/** --timeout in ms: 10 minutes unless it says otherwise. */
export function timeoutOf(parsed: Parsed): number {
  const raw = parsed.values.timeout as string | undefined;
  if (raw === undefined) return 600_000;
  const m = /^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)?$/.exec(raw);
  if (!m) throw usage(`--timeout ${JSON.stringify(raw)}: expected a duration such as 90s or 10m`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
}
