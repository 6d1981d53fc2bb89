// A node group at a glance: its scaling state per region and role, then every node by region and
// role with its state, load against its limit, parent and last heartbeat, and the two things an
// operator does to a node: drain it (no new clients; retired when empty) or destroy it now (the
// API's doom: destroyed at once, its clients cut)
// now). Which of them a node's state allows is the service's own state machine's answer.
import { useState } from 'preact/hooks';
import { transition } from '../../policy/states.js';
import { ROLES } from '../../domain/vocabulary.js';
import { nodeAction, type GroupDetail, type Node } from './api.js';
import { openModal } from './dialogs.js';
import { openNode } from './node-details.js';
import { StateBadge, LoadBar } from './badges.js';
import { ago, num } from './format.js';
import { refresh, toast } from './store.js';
import { ACTIONS, DataTable } from './table.js';

const allows = (n: Node, action: 'drain' | 'doom') => {
  const t = transition(n.state, { type: action });
  return t.ok && t.state !== n.state;
};

function act(group: string, node: Node, action: 'drain' | 'doom') {
  const drain = action === 'drain';
  openModal({
    kind: 'confirm',
    title: drain ? `Drain ${node.id}?` : `Destroy ${node.id} now?`,
    danger: !drain,
    confirm: drain ? 'Drain' : 'Destroy now',
    body: drain ? (
      <p>
        No new clients are sent to this {node.role}. It is retired when its last connection ends, or after the group's <code>drainTimeout</code>. It has {num(node.connections.publisher)} publishers
        and {num(node.connections.subscriber)} viewers now. This cannot be undone.
      </p>
    ) : (
      <p>
        This {node.role} is <strong>destroyed at once</strong>: its {num(node.connections.publisher)} publishers and {num(node.connections.subscriber)} viewers are cut. Draining is the gentle way.
      </p>
    ),
    run: async () => {
      const r = await nodeAction(group, node.id, action);
      toast('ok', `${node.id}: ${r.state}`);
      void refresh();
    },
  });
}

function NodeRow({ group, node, now, changed }: { group: string; node: Node; now: number; changed: boolean }) {
  const why = node.problem ?? node.faultReason;
  return (
    <tr id={`node-${node.id}`} class={changed ? 'changed' : undefined} data-node={node.id} data-state={node.state}>
      <th scope="row" data-label="Node">
        <button type="button" class="link mono" onClick={() => openNode(group, node, now)} aria-label={`Details of ${node.id}`}>
          {node.id}
        </button>
        <span class="sub mono">{node.address ?? 'no address yet'}</span>
      </th>
      <td data-label="State">
        <StateBadge state={node.state} />
        <span class="sub">for {ago(node.stateSince, now).replace(' ago', '')}</span>
        {why && <span class="sub warn-text">{why}</span>}
      </td>
      <td data-label="Load / limit">
        <LoadBar load={node.load} limit={node.limit} />
      </td>
      <td data-label="Publishers · viewers" class="num">
        {num(node.connections.publisher)} · {num(node.connections.subscriber)}
      </td>
      <td data-label="Streams" class="num">
        {num(node.streams)}
      </td>
      <td data-label="Parent" class="mono">
        {node.parent ?? '—'}
      </td>
      <td data-label="Heartbeat">{ago(node.lastHeartbeat, now)}</td>
      <td data-label="Actions" class="actions">
        <button type="button" disabled={!allows(node, 'drain')} onClick={() => act(group, node, 'drain')} aria-label={`Drain ${node.id}`}>
          Drain
        </button>
        {/* "Destroy", not "Destroy now", in the row: the table fits 1280 px; the dialog says "now". */}
        <button
          type="button"
          class="danger-outline"
          disabled={!allows(node, 'doom')}
          onClick={() => act(group, node, 'doom')}
          aria-label={`Destroy ${node.id} now`}
          title="Destroy now, without draining"
        >
          Destroy
        </button>
      </td>
    </tr>
  );
}

/** Fixed widths (styles.css), so that the tables of every role and region line up. */
const COLUMNS = ['node', 'state', 'load', 'conn', 'streams', 'parent', 'beat', 'actions'] as const;

function NodeTable({ group, nodes, now, changed, caption }: { group: string; nodes: Node[]; now: number; changed: Record<string, number>; caption: string }) {
  return (
    <DataTable
      class="nodes stack"
      caption={caption}
      showCaption
      columns={['Node', 'State', 'Load / limit', 'Publishers · viewers', 'Streams', 'Parent', 'Heartbeat', ACTIONS]}
      colgroup={
        <colgroup>
          {COLUMNS.map((c) => (
            <col key={c} class={`col-${c}`} />
          ))}
        </colgroup>
      }
    >
      <tbody>
        {nodes.map((n) => (
          <NodeRow key={n.id} group={group} node={n} now={now} changed={now - (changed[n.id] ?? 0) < 4000} />
        ))}
      </tbody>
    </DataTable>
  );
}

function Scaling({ detail }: { detail: GroupDetail }) {
  return (
    <DataTable
      class="scaling"
      caption="Scaling rules: nodes against min and max"
      showCaption
      columns={['Region', 'Role', 'In service', 'Starting', 'Fault', 'Min – max']}
      after={
        detail.schedules.length > 0 && (
          <p class="muted small">
            Schedules:{' '}
            {detail.schedules.map((x, i) => (
              <span key={x.name}>
                {i > 0 ? ' · ' : ''}
                <span class="mono">{x.name}</span> ({x.role}
                {x.region ? ` in ${x.region}` : ''}, <span class="mono">{x.cron}</span> {x.timezone}){x.next ? `, next ${new Date(x.next).toLocaleString()}` : ''}
              </span>
            ))}
          </p>
        )
      }
    >
      <tbody>
        {detail.scaling.map((r) => (
          <tr key={`${r.region}/${r.role}`} class={r.inService + r.pending < r.min || r.fault > 0 ? 'attention' : undefined}>
            <th scope="row" data-label="Region">
              {r.region}
            </th>
            <td data-label="Role">{r.role}</td>
            <td data-label="In service" class="num">
              {r.inService}
            </td>
            <td data-label="Starting" class="num">
              {r.pending}
            </td>
            <td data-label="Fault" class={r.fault > 0 ? 'num bad-text' : 'num'}>
              {r.fault}
            </td>
            <td data-label="Min – max" class="num">
              {r.min} – {r.max}
              {r.schedules.map((w) => (
                <span key={w.name} class="sub" title={`from ${new Date(w.from).toLocaleString()}`}>
                  schedule {w.name} until {new Date(w.until).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })}
                </span>
              ))}
            </td>
          </tr>
        ))}
      </tbody>
    </DataTable>
  );
}

/** The relay tree: each origin with the relays and edges that pull from it. */
function Tree({ nodes }: { nodes: Node[] }) {
  const children = new Map<string, Node[]>();
  const ids = new Set(nodes.map((n) => n.id));
  for (const n of nodes) if (n.parent && ids.has(n.parent)) children.set(n.parent, [...(children.get(n.parent) ?? []), n]);
  const roots = nodes.filter((n) => (n.role === 'origin' || n.role === 'relay' || n.role === 'edge') && !(n.parent && ids.has(n.parent)));
  const item = (n: Node, depth: number) => (
    <li key={n.id}>
      <span class="tree-node">
        <span class="mono">{n.id}</span> <StateBadge state={n.state} />{' '}
        <span class="muted">
          {n.role}, {n.region}
        </span>
      </span>
      {(children.get(n.id)?.length ?? 0) > 0 && depth < 8 && <ul>{children.get(n.id)!.map((c) => item(c, depth + 1))}</ul>}
    </li>
  );
  if (roots.length === 0) return <p class="muted">No origins, relays or edges.</p>;
  return <ul class="tree">{roots.sort((a, b) => ROLES.indexOf(a.role) - ROLES.indexOf(b.role) || a.id.localeCompare(b.id)).map((n) => item(n, 0))}</ul>;
}

export function NodesView({ detail, more, now, changed }: { detail: GroupDetail; more: boolean; now: number; changed: Record<string, number> }) {
  const [filter, setFilter] = useState('');
  const words = filter.toLowerCase().split(/\s+/).filter(Boolean);
  const shown = detail.nodeList.filter((n) => words.every((w) => `${n.id} ${n.state} ${n.role} ${n.region} ${n.parent ?? ''} ${n.address ?? ''}`.toLowerCase().includes(w)));
  const regions = [...new Set([...detail.regions, ...shown.map((n) => n.region)])];
  return (
    <>
      <section aria-labelledby="scaling-h">
        <h2 id="scaling-h">Scaling</h2>
        <Scaling detail={detail} />
      </section>
      <section aria-labelledby="nodes-h">
        <div class="section-head">
          <h2 id="nodes-h">Nodes</h2>
          <label class="filter">
            <span class="visually-hidden">Filter nodes</span>
            <input type="search" placeholder="Filter: id, state, role, region…" value={filter} onInput={(e) => setFilter((e.target as HTMLInputElement).value)} />
          </label>
        </div>
        {more && <p class="notice">Showing the first {detail.nodeList.length} nodes of this group.</p>}
        {shown.length === 0 && <p class="muted">{detail.nodeList.length === 0 ? 'This group has no nodes yet.' : 'No node matches the filter.'}</p>}
        {regions.map((region) => {
          const here = shown.filter((n) => n.region === region);
          if (here.length === 0) return null;
          return (
            <div class="region" key={region}>
              <h3>{region}</h3>
              {ROLES.map((role) => {
                const nodes = here.filter((n) => n.role === role).sort((a, b) => a.id.localeCompare(b.id));
                return nodes.length === 0 ? null : <NodeTable key={role} group={detail.name} nodes={nodes} now={now} changed={changed} caption={`${role}s in ${region}`} />;
              })}
            </div>
          );
        })}
      </section>
      <section aria-labelledby="tree-h">
        <h2 id="tree-h">Relay tree</h2>
        <Tree nodes={detail.nodeList} />
      </section>
    </>
  );
}
