// login, logout, password, whoami-like status: the session with one service, and the one-screen
// view of it.
import { detail } from './nodegroups.js';
import type { Static } from 'typebox';
import type { NodeGroupSummary, StreamView } from '../../schemas/api.js';
import { Api, CliError, EXIT, usage } from '../api.js';
import type { Command } from '../command.js';
import { removeSaved, serviceUrl, writeSaved } from '../credentials.js';
import { pipedLine, readPassword } from '../prompt.js';
import { note, out, percent, table } from '../table.js';

type Summary = Static<typeof NodeGroupSummary>;
type Stream = Static<typeof StreamView>;

const login: Command = {
  name: 'login',
  summary: 'log in and keep the token for the next commands (0600 file)',
  options: {
    user: { type: 'string', short: 'u', value: 'NAME', description: 'the user (default: SWITCHYARD_USER, else admin)' },
    'password-stdin': { type: 'boolean', description: 'read the password from the first line of standard input' },
  },
  details: [
    'The password is asked for on the terminal (not echoed), or read from standard input when it is',
    'not a terminal. The token and the URL go to $XDG_CONFIG_HOME/switchyard/token (~/.config/…),',
    'mode 0600 in a 0700 directory; later commands send it only to that URL. It expires after the',
    "service's auth.tokenTtl (1 h by default). With --json: the login answer, token included.",
    'On a fresh service the generated password is in <dataDir>/initial-admin-password.',
  ].join('\n'),
  async run(ctx, { values }) {
    const url = serviceUrl(values.url as string | undefined, ctx.env, null);
    const user = (values.user as string | undefined) ?? (ctx.env.SWITCHYARD_USER || 'admin');
    const password = values['password-stdin'] ? await pipedLine(0) : await readPassword(`password for ${user} at ${url}: `);
    if (!password) throw usage('no password given');
    const api = new Api(url, () => '');
    const { body } = await api.call<{ accessToken: string; expiresIn: number }>('POST', '/as/v1/auth/login', { body: { username: user, password }, auth: false });
    writeSaved(ctx.file, { url, user, token: body.accessToken, expiresAt: ctx.now() + body.expiresIn * 1000 });
    ctx.show(body, () => out(`logged in to ${url} as ${user} (token in ${ctx.file}, valid ${Math.round(body.expiresIn / 60)} min)`));
  },
};

const logout: Command = {
  name: 'logout',
  summary: 'forget the saved token',
  async run(ctx) {
    const removed = removeSaved(ctx.file);
    if (!ctx.jsonOut) out(removed ? `removed ${ctx.file}` : 'not logged in');
    else out(JSON.stringify({ removed }));
  },
};

const password: Command = {
  name: 'password',
  summary: "change the logged-in user's password (the generated one first, on a public bind)",
  details: [
    'Asks for the current and the new password (or reads them from the first two lines of',
    'standard input). Every earlier token of the user stops working, this one included: log in again.',
  ].join('\n'),
  async run(ctx) {
    const current = await readPassword('current password: ', 0);
    const next = await readPassword('new password (12 characters or more): ', 1);
    if (process.stdin.isTTY && (await readPassword('new password again: ', 2)) !== next) throw usage('the two new passwords differ');
    await ctx.api.call('POST', '/as/v1/auth/password', { body: { currentPassword: current, newPassword: next } });
    removeSaved(ctx.file);
    ctx.show({ changed: true }, () => out('password changed; every earlier token is retired: switchyard login'));
  },
};

const ROLE_ORDER = ['origin', 'relay', 'edge', 'transcoder'];
const STATE_COLUMNS = ['INSERVICE', 'STARTING', 'DRAINING', 'FAULT', 'LEAVING'] as const;
/** States folded into the status screen's columns (docs/nodes.md has each). */
const COLUMN_OF: Record<string, (typeof STATE_COLUMNS)[number]> = {
  INSERVICE: 'INSERVICE',
  REQUESTED: 'STARTING',
  CREATING: 'STARTING',
  CREATED: 'STARTING',
  STARTED: 'STARTING',
  SOFT_SUNSET: 'DRAINING',
  HARD_SUNSET: 'DRAINING',
  FAULT: 'FAULT',
  DOOMED: 'LEAVING',
  DESTRUCTION_REQUESTED: 'LEAVING',
  DESTROYING: 'LEAVING',
};

const status: Command = {
  name: 'status',
  summary: 'one screen: readiness, node groups, nodes by state, capacity, streams',
  details: "With --json: {ready, nodegroups, streams}, each the API's own answer (GET /readyz, /nodegroups, /streams).",
  async run(ctx) {
    ctx.token(); // a session problem first, before the service is asked anything
    const api = ctx.api;
    const ready = await api.call<{ status: string; groups?: Record<string, boolean>; detail?: string }>('GET', '/as/v1/readyz', { auth: false, accept: [503] });
    const [groups, streams] = await Promise.all([api.get<Summary[]>('/as/v1/nodegroups?limit=1000'), api.get<Stream[]>('/as/v1/streams?limit=1000')]);
    if (ctx.jsonOut) {
      out(JSON.stringify({ ready: ready.body, nodegroups: groups.body, streams: streams.body }, null, 2));
      return;
    }
    const g = groups.body;
    out(
      `${ctx.url}  ${ready.status === 200 ? 'ready' : `NOT READY (${(ready.body as { detail?: string }).detail ?? ready.status})`}  ${g.length} node group(s), ${streams.body.filter((s) => s.state === 'LIVE').length} live stream(s)`,
    );
    out('');
    out(
      table(
        ['GROUP', 'PLATFORM', 'REGIONS', 'NODES', 'LIVE', 'PENDING', 'PROVISIONS', 'STATUS'],
        g.map((s) => [s.name, s.platform, s.regions.join(','), s.nodes.total, s.streams.live, s.streams.pending, s.provisions, s.ready ? s.status : `${s.status}, restarting`]),
      ),
    );
    const rows: Array<Array<string | number>> = [];
    for (const s of g) {
      const roles = Object.keys(s.nodes.byRole).sort((a, b) => ROLE_ORDER.indexOf(a) - ROLE_ORDER.indexOf(b));
      for (const role of roles) {
        const counts = Object.fromEntries(STATE_COLUMNS.map((c) => [c, 0]));
        for (const [state, n] of Object.entries(s.nodes.byRole[role] ?? {})) {
          const column = COLUMN_OF[state] ?? 'LEAVING';
          counts[column] = (counts[column] ?? 0) + n;
        }
        const load = s.load.find((l) => l.role === role);
        rows.push([s.name, role, ...STATE_COLUMNS.map((c) => counts[c]!), load ? `${load.connections}/${load.capacity}` : '-', load ? percent(load.connections, load.capacity) : '-']);
      }
    }
    if (rows.length > 0) {
      out('');
      out(table(['GROUP', 'ROLE', ...STATE_COLUMNS, 'LOAD/CAPACITY', 'USED'], rows));
    }
    // Schedules with a window open now (docs/scaling.md): the min and max they set, and until when.
    const details = await Promise.all(g.map((s) => detail(ctx, s.name).catch(() => null)));
    const windows = details.flatMap((d) => (d ? d.scaling.flatMap((r) => r.schedules.map((w) => [d.name, w.name, r.region, r.role, w.min ?? '-', w.max ?? '-', w.until])) : []));
    if (windows.length > 0) {
      out('');
      out(table(['GROUP', 'SCHEDULE', 'REGION', 'ROLE', 'MIN', 'MAX', 'UNTIL'], windows));
    }
    const faults = rows.reduce((a, r) => a + (r[5] as number), 0);
    if (faults > 0) note(`${faults} node(s) FAULT: switchyard nodes list --group GROUP shows why`);
    if (ready.status !== 200) throw new CliError('the service is not ready', EXIT.failed);
  },
};

export const sessionCommands = [login, logout, password, status];
