// nodegroups list|show|create|replace|delete: node groups through the admin API, waiting (with
// their live events) until a new group's nodes are INSERVICE and a deleted one is gone.
import { readFileSync } from 'node:fs';
import type { Static } from 'typebox';
import type { EventRecord } from '../../domain/events.js';
import type { NodeGroupDetail, NodeGroupSummary } from '../../schemas/api.js';
import { CliError, EXIT, usage } from '../api.js';
import type { Command } from '../command.js';
import { timeoutOf, WAIT_OPTIONS, type Context } from '../context.js';
import { watch } from '../follow.js';
import { stdinLines } from '../prompt.js';
import { ago, out, percent, table } from '../table.js';

type Summary = Static<typeof NodeGroupSummary>;
export type Detail = Static<typeof NodeGroupDetail>;

/** A JSON file (`-` for standard input), its errors named with the file. */
export async function readJsonFile(file: string | undefined): Promise<unknown> {
  if (!file) throw usage('-f FILE is required (a JSON file; - for standard input)');
  let text: string;
  try {
    text = file === '-' ? (await stdinLines()).join('\n') : readFileSync(file, 'utf8');
  } catch (err) {
    throw usage(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw usage(`${file === '-' ? 'standard input' : file} is not JSON: ${(err as Error).message}`);
  }
}

export const FILE_OPTION = { file: { type: 'string', short: 'f', value: 'FILE', description: 'the JSON body (- for standard input)', required: true } } as const;

export async function detail(ctx: Context, name: string, after?: string): Promise<Detail> {
  return (await ctx.api.get<Detail>(`${ctx.groupPath(name)}?limit=1000${after ? `&after=${encodeURIComponent(after)}` : ''}`)).body;
}

/** Every node of a group: the detail's pages one after another. */
export async function allNodes(ctx: Context, name: string): Promise<Detail> {
  const first = await detail(ctx, name);
  let page = first.nodeList;
  while (page.length === 1000) {
    page = (await detail(ctx, name, page.at(-1)!.id)).nodeList;
    first.nodeList.push(...page);
  }
  return first;
}

export function nodesTable(d: Detail, now = Date.now()): string {
  return table(
    ['NODE', 'ROLE', 'REGION', 'STATE', 'ADDRESS', 'PARENT', 'LOAD', 'LIMIT', 'STREAMS', 'HEARTBEAT', 'PROBLEM'],
    d.nodeList.map((n) => [n.id, n.role, n.region, n.state, n.address, n.parent, n.load, n.limit, n.streams, ago(n.lastHeartbeat, now), n.faultReason ?? n.problem ?? '']),
  );
}

/** A group's schedules: when each next opens a window, and the windows open now with what they set. */
export function schedulesTable(d: Detail): string {
  const open = new Map<string, string[]>();
  for (const r of d.scaling) {
    for (const w of r.schedules)
      open.set(w.name, [...(open.get(w.name) ?? []), `${r.region}/${r.role}${w.min !== undefined ? ` min ${w.min}` : ''}${w.max !== undefined ? ` max ${w.max}` : ''} until ${w.until}`]);
  }
  return table(
    ['SCHEDULE', 'ROLE', 'REGION', 'CRON', 'TIMEZONE', 'NEXT', 'OPEN NOW'],
    d.schedules.map((s) => [s.name, s.role, s.region ?? '(all)', s.cron, s.timezone, s.next ?? '-', (open.get(s.name) ?? []).join('; ') || '-']),
  );
}

/** Every rule has at least its min nodes in service. */
const settled = (d: Detail) => d.scaling.every((r) => r.inService >= r.min);

const list: Command = {
  name: 'nodegroups list',
  summary: 'every node group: platform, regions, nodes, streams',
  async run(ctx) {
    const { body } = await ctx.api.get<Summary[]>('/as/v1/nodegroups?limit=1000');
    ctx.show(body, () =>
      out(
        table(
          ['NAME', 'PLATFORM', 'REGIONS', 'NODES', 'LIVE', 'PENDING', 'PROVISIONS', 'STATUS'],
          body.map((s) => [s.name, s.platform, s.regions.join(','), s.nodes.total, s.streams.live, s.streams.pending, s.provisions, s.status]),
        ),
      ),
    );
  },
};

const show: Command = {
  name: 'nodegroups show',
  summary: 'one node group: its rules against its nodes, and every node',
  args: ['NAME'],
  details: 'With --json: GET /as/v1/nodegroups/NAME as the API answers it (its first 1000 nodes).',
  async run(ctx, { positionals }) {
    const d = ctx.jsonOut ? await detail(ctx, positionals[0]!) : await allNodes(ctx, positionals[0]!);
    ctx.show(d, () => {
      out(`${d.name}  ${d.platform}  ${d.status}${d.ready ? '' : ' (restarting)'}  ${d.streams.live} live, ${d.streams.pending} pending stream(s), ${d.provisions} provision(s)`);
      out('');
      out(
        table(
          ['REGION', 'ROLE', 'MIN', 'MAX', 'INSERVICE', 'STARTING', 'FAULT', 'LOAD/CAPACITY'],
          d.scaling.map((r) => {
            const load = d.load.find((l) => l.role === r.role);
            return [r.region, r.role, r.min, r.max, r.inService, r.pending, r.fault, load ? `${load.connections}/${load.capacity} ${percent(load.connections, load.capacity)}` : '-'];
          }),
        ),
      );
      if (d.schedules.length > 0) {
        out('');
        out(schedulesTable(d));
      }
      out('');
      out(d.nodeList.length ? nodesTable(d) : '(no nodes)');
    });
  },
};

const create: Command = {
  name: 'nodegroups create',
  summary: 'create a node group from a JSON file, and wait until its min nodes are INSERVICE',
  options: { ...FILE_OPTION, ...WAIT_OPTIONS },
  details: [
    'The file is the body of POST /as/v1/nodegroups (docs/api.md; config/default.json holds one).',
    'Its live events (nodes created and coming INSERVICE, Terraform applies) are shown on stderr',
    'while it waits; a bad body is refused with every field named (exit 1). With --json: the',
    'created group as the API answers it.',
  ].join('\n'),
  async run(ctx, { values }) {
    const body = (await readJsonFile(values.file as string | undefined)) as { name?: unknown };
    if (typeof body !== 'object' || body === null || typeof body.name !== 'string') throw usage('the file must be a node group: a JSON object with its name');
    const name = body.name;
    const post = () => ctx.api.call('POST', '/as/v1/nodegroups', { body });
    if (values['no-wait']) {
      const r = await post();
      return ctx.show(r.body, () => out(`node group ${name} created`));
    }
    // Every node of a new group comes INSERVICE through an event: with the stream there, those
    // events are shown before the command ends.
    const inService = new Set<string>();
    const show = (e: EventRecord) => {
      if (e.type === 'node.state' && e.to === 'INSERVICE') inService.add(e.nodeId);
      return true;
    };
    const r = await watch(ctx, { group: name, what: `the nodes of ${name} to come INSERVICE`, timeoutMs: timeoutOf({ values, positionals: [] }), show }, post, async (_answer, stream) => {
      const d = await detail(ctx, name);
      return settled(d) && (!stream.connected || d.nodeList.every((n) => n.state !== 'INSERVICE' || inService.has(n.id)));
    });
    ctx.show(r.body, () => out(`node group ${name} created; its nodes are in service`));
  },
};

const replace: Command = {
  name: 'nodegroups replace',
  summary: "replace a node group's definition from a JSON file (PUT), and wait until its min nodes are INSERVICE",
  args: ['NAME'],
  options: { ...FILE_OPTION, ...WAIT_OPTIONS },
  async run(ctx, { values, positionals }) {
    const name = positionals[0]!;
    const body = await readJsonFile(values.file as string | undefined);
    const put = () => ctx.api.call('PUT', ctx.groupPath(name), { body });
    if (values['no-wait']) {
      const r = await put();
      return ctx.show(r.body, () => out(`node group ${name} replaced`));
    }
    const r = await watch(ctx, { group: name, what: `the nodes of ${name} to come INSERVICE`, timeoutMs: timeoutOf({ values, positionals: [] }) }, put, async () => settled(await detail(ctx, name)));
    ctx.show(r.body, () => out(`node group ${name} replaced; its nodes are in service`));
  },
};

const remove: Command = {
  name: 'nodegroups delete',
  summary: 'delete a node group: its nodes drain and are destroyed; waits until it is gone',
  args: ['NAME'],
  options: { ...WAIT_OPTIONS, yes: { type: 'boolean', short: 'y', description: 'do not ask (needed when standard input is not a terminal)' } },
  details: 'Viewers on its nodes are cut when they are destroyed. With --json: the 202 answer {name, status}.',
  async run(ctx, { values, positionals }) {
    const name = positionals[0]!;
    if (!values.yes) {
      if (!process.stdin.isTTY) throw usage(`deleting node group ${name} destroys its nodes: add --yes`);
      process.stderr.write(`delete node group ${name} and destroy its nodes? [y/N] `);
      const answer = await new Promise<string>((resolve) => process.stdin.once('data', (d) => resolve(String(d).trim())));
      process.stdin.pause();
      if (!/^y(es)?$/i.test(answer)) throw new CliError('not deleted', EXIT.failed);
    }
    const del = () => ctx.api.call('DELETE', ctx.groupPath(name));
    if (values['no-wait']) {
      const r = await del();
      return ctx.show(r.body, () => out(`node group ${name} is being deleted`));
    }
    let deleted = false;
    const show = (e: EventRecord) => {
      if (e.type === 'nodegroup.changed' && e.change === 'deleted') deleted = true;
      return true;
    };
    const gone = async () => (await ctx.api.call('GET', `${ctx.groupPath(name)}?limit=1`, { accept: [404] })).status === 404;
    const r = await watch(ctx, { group: name, what: `node group ${name} to drain and go`, timeoutMs: timeoutOf({ values, positionals: [] }), show }, del, async (_answer, stream) =>
      stream.connected ? deleted : gone(),
    );
    ctx.show(r.body, () => out(`node group ${name} deleted`));
  },
};

export const nodeGroupCommands = [list, show, create, replace, remove];
