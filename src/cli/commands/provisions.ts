// provisions list|show|create|replace|delete: the ABR ladders of a node group (endpoint 3 and
// the provision resource around it).
import type { Command } from '../command.js';
import { GROUP_OPTION } from '../context.js';
import type { Provision as ProvisionRecord } from '../../domain/records.js';
import { seg, usage } from '../api.js';
import { out, table } from '../table.js';
import { FILE_OPTION, readJsonFile } from './nodegroups.js';

// What the API answers for a provision is the stored record (docs/api.md).
type Provision = Pick<ProvisionRecord, 'streamName' | 'region' | 'streams'>;

const path = (group: string, stream?: string) => `/as/v1/provision/${seg(group)}${stream === undefined ? '' : `/${seg(stream)}`}`;
const kbps = (bits: number) => `${Math.round(bits / 1000)} kb/s`;

function ladder(p: Provision): string {
  return table(
    ['RENDITION', 'LEVEL', 'SIZE', 'FPS', 'VIDEO', 'AUDIO'],
    [...p.streams].sort((a, b) => a.level - b.level).map((r) => [r.name, r.level, `${r.videoWidth}x${r.videoHeight}`, r.videoFPS, kbps(r.videoBR), kbps(r.audioBR)]),
  );
}

const list: Command = {
  name: 'provisions list',
  summary: "a node group's provisions: stream, region, renditions",
  options: GROUP_OPTION,
  async run(ctx) {
    const group = await ctx.group();
    const { body } = await ctx.api.get<Provision[]>(`${path(group)}?limit=1000`);
    ctx.show(body, () =>
      out(
        table(
          ['STREAM', 'REGION', 'RENDITIONS'],
          body.map((p) => [p.streamName, p.region, p.streams.map((r) => r.name).join(',')]),
        ),
      ),
    );
  },
};

const show: Command = {
  name: 'provisions show',
  summary: "one provision's ladder",
  args: ['STREAM'],
  options: GROUP_OPTION,
  async run(ctx, { positionals }) {
    const group = await ctx.group();
    const { body } = await ctx.api.get<Provision>(path(group, positionals[0]!));
    ctx.show(body, () => {
      out(`${body.streamName} in ${group}, region ${body.region}`);
      out(ladder(body));
    });
  },
};

const create: Command = {
  name: 'provisions create',
  summary: 'register a provision (an ABR ladder) from a JSON file (endpoint 3)',
  options: { ...GROUP_OPTION, ...FILE_OPTION },
  details: 'The file is the body of POST /as/v1/provision/GROUP: {streamName, region, streams: [renditions]}, bitrates in bits per second.',
  async run(ctx, { values }) {
    const group = await ctx.group();
    const body = await readJsonFile(values.file as string | undefined);
    const r = await ctx.api.call<Provision>('POST', path(group), { body });
    ctx.show(r.body, () => {
      out(`provision ${r.body.streamName} created in ${group}`);
      out(ladder(r.body));
    });
  },
};

const replace: Command = {
  name: 'provisions replace',
  summary: 'replace a provision from a JSON file (PUT)',
  args: ['STREAM'],
  options: { ...GROUP_OPTION, ...FILE_OPTION },
  async run(ctx, { values, positionals }) {
    const group = await ctx.group();
    const body = await readJsonFile(values.file as string | undefined);
    if (typeof body !== 'object' || body === null) throw usage('the file must be a provision: a JSON object');
    const r = await ctx.api.call<Provision>('PUT', path(group, positionals[0]!), { body });
    ctx.show(r.body, () => out(`provision ${r.body.streamName} replaced in ${group}`));
  },
};

const remove: Command = {
  name: 'provisions delete',
  summary: 'delete a provision (a live stream keeps its renditions until it ends)',
  args: ['STREAM'],
  options: GROUP_OPTION,
  async run(ctx, { positionals }) {
    const group = await ctx.group();
    await ctx.api.call('DELETE', path(group, positionals[0]!));
    // 204: with --json, nothing to print (the exit code says it).
    if (!ctx.jsonOut) out(`provision ${positionals[0]} deleted from ${group}`);
  },
};

export const provisionCommands = [list, show, create, replace, remove];
