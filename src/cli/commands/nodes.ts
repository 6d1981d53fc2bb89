// nodes list|drain|doom|token|revoke: one node group's nodes, and what an admin does to one node.
// drain and doom wait (showing the node's events) until the node is gone.
import type { EventRecord } from '../../domain/events.js';
import type { Command } from '../command.js';
import { GROUP_OPTION, timeoutOf, WAIT_OPTIONS, type Context } from '../context.js';
import { watch } from '../follow.js';
import { out, table } from '../table.js';
import { allNodes, nodesTable } from './nodegroups.js';

const list: Command = {
  name: 'nodes list',
  summary: "a node group's nodes: state, address, parent, load, last heartbeat, problem",
  options: {
    ...GROUP_OPTION,
    state: { type: 'string', value: 'STATE', description: 'only nodes in this state (INSERVICE, FAULT, …)' },
    role: { type: 'string', value: 'ROLE', description: 'only nodes of this role' },
  },
  details: 'With --json: the nodeList of GET /as/v1/nodegroups/GROUP (every page), filtered.',
  async run(ctx, { values }) {
    const group = await ctx.group();
    const d = await allNodes(ctx, group);
    d.nodeList = d.nodeList.filter((n) => (!values.state || n.state === values.state) && (!values.role || n.role === values.role));
    ctx.show(d.nodeList, () => out(d.nodeList.length ? nodesTable(d) : '(no nodes)'));
  },
};

/** POST …/nodes/NODE/ACTION, then wait for the node to be removed. */
function retire(action: 'drain' | 'doom'): Command {
  return {
    name: `nodes ${action}`,
    summary: action === 'drain' ? 'drain a node: no new clients; retired when its connections reach zero (or after drainTimeout)' : 'condemn a node (DOOMED): destroyed at once, its clients cut',
    args: ['NODE'],
    options: { ...GROUP_OPTION, ...WAIT_OPTIONS },
    details: `Waits until the node is removed, showing its state changes; --no-wait returns once the service has accepted it. With --json: the 202 answer {nodeId, state}.`,
    async run(ctx, { values, positionals }) {
      const group = await ctx.group();
      const node = positionals[0]!;
      const post = () => ctx.api.call<{ nodeId: string; state: string }>('POST', ctx.groupPath(group, 'nodes', node, action));
      if (values['no-wait']) {
        const r = await post();
        return ctx.show(r.body, () => out(`${node}: ${r.body.state}`));
      }
      let removed = false;
      const mine = (e: EventRecord) => 'nodeId' in e && e.nodeId === node;
      const r = await watch(
        ctx,
        {
          group,
          what: `${node} to be removed`,
          timeoutMs: timeoutOf({ values, positionals: [] }),
          show: (e) => {
            if (e.type === 'node.state' && mine(e) && e.to === null) removed = true;
            return mine(e) || e.type === 'platform.progress' || e.type === 'platform.error';
          },
        },
        post,
        // The event that it is gone, when the stream is there to bring it; else the node list.
        async (answer, stream) => removed || answer.body.state === 'removed' || (!stream.connected && !(await hasNode(ctx, group, node))),
      );
      ctx.show(r.body, () => out(`${node} removed`));
    },
  };
}

async function hasNode(ctx: Context, group: string, node: string): Promise<boolean> {
  return (await allNodes(ctx, group)).nodeList.some((n) => n.id === node);
}

const token: Command = {
  name: 'nodes token',
  summary: "a node token for a static node's agent (SWITCHYARD_NODE_TOKEN)",
  args: ['NODE'],
  options: GROUP_OPTION,
  details: 'Prints the token alone on stdout (for a file or a secret store). With --json: {accessToken, tokenType, expiresIn}.',
  async run(ctx, { positionals }) {
    const group = await ctx.group();
    const { body } = await ctx.api.call<{ accessToken: string; expiresIn: number }>('POST', ctx.groupPath(group, 'nodes', positionals[0]!, 'token'));
    ctx.show(body, () => {
      out(body.accessToken);
      ctx.progress(`a node token for ${positionals[0]} in ${group}, valid ${Math.round(body.expiresIn / 3600)} h (its agent renews it through heartbeats)`);
    });
  },
};

const revoke: Command = {
  name: 'nodes revoke',
  summary: 'revoke every token issued so far to a node (its heartbeats are refused)',
  args: ['NODE'],
  options: GROUP_OPTION,
  async run(ctx, { positionals }) {
    const group = await ctx.group();
    const { body } = await ctx.api.call<{ nodeId: string; generation: number }>('POST', ctx.groupPath(group, 'nodes', positionals[0]!, 'token', 'revoke'));
    ctx.show(body, () => out(table(['NODE', 'GENERATION'], [[body.nodeId, body.generation]])));
  },
};

export const nodeCommands = [list, retire('drain'), retire('doom'), token, revoke];
