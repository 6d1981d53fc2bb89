// lookup publish|subscribe|transcode STREAM: which node a publisher or a player of a stream gets,
// as an app would ask (endpoints 4, 5 and 2 with transcode=true). A publish or transcode lookup
// binds the stream, as the app's would.
import { seg, usage } from '../api.js';
import type { Command } from '../command.js';
import { GROUP_OPTION } from '../context.js';
import { out, table } from '../table.js';

interface Assignment {
  serverAddress: string;
  scope: string;
  name: string;
  nodeId: string;
  role: string;
  region: string;
  port?: number;
  protocol?: string;
  url: string;
}

const ROUTING = {
  ...GROUP_OPTION,
  region: { type: 'string', value: 'A,B', description: 'regions in order of preference (default: nearest the client)' },
  strict: { type: 'boolean', description: 'never fall back to another region (503 instead)' },
  'client-ip': { type: 'string', value: 'IP', description: 'ask on behalf of a client at this address (geo routing)' },
} as const;

const DETAILS = [
  'Prints the node, its address and, for publish and subscribe, the URL a client connects to.',
  'With --json: the assignment as the API answers it. A lookup binds the stream (publish,',
  "transcode) or counts a viewer against the node (subscribe), as an app's lookup does.",
].join('\n');

function lookupCommand(kind: 'publish' | 'subscribe' | 'transcode'): Command {
  return {
    name: `lookup ${kind}`,
    summary:
      kind === 'publish'
        ? 'the origin a publisher of STREAM gets (endpoint 4)'
        : kind === 'subscribe'
          ? 'the edge a player of STREAM gets (endpoint 5)'
          : 'the transcoder a publisher of a provisioned STREAM gets (endpoint 2, transcode=true)',
    args: ['STREAM'],
    options: ROUTING,
    details: DETAILS,
    async run(ctx, { values, positionals }) {
      const stream = positionals[0]!;
      const query = new URLSearchParams();
      if (values.region) query.set('region', values.region as string);
      if (values.strict) query.set('strict', 'true');
      if (values['client-ip']) query.set('clientIp', values['client-ip'] as string);
      let path: string;
      if (kind === 'transcode') {
        // Endpoint 2 names its group in the path.
        const group = await ctx.group();
        query.set('transcode', 'true');
        path = `/as/v1/streams/stream/${seg(group)}/${seg(stream)}?${query}`;
      } else {
        const group = (values.group as string | undefined) ?? (ctx.env.SWITCHYARD_GROUP || undefined);
        if (group) query.set('nodeGroup', group);
        path = `/as/v1/streams/live/${seg(stream)}/${kind}${query.size ? `?${query}` : ''}`;
      }
      if (!stream) throw usage('STREAM is empty');
      const { body } = await ctx.api.get<Assignment>(path);
      // The answer's url is the whole of what a client connects to: its admission token included.
      ctx.show(body, () => out(table(['NODE', 'ROLE', 'REGION', 'ADDRESS', 'URL'], [[body.nodeId, body.role, body.region, body.serverAddress, body.url]])));
    },
  };
}

export const lookupCommands = [lookupCommand('publish'), lookupCommand('subscribe'), lookupCommand('transcode')];
