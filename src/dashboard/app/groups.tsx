// Every node group with its nodes by state, streams and provisions; create, replace and delete
// them. A group is edited as the JSON the API takes (README: node groups through the API).
import { exampleNodeGroup } from '../../http/examples.js';
import { createGroup, deleteGroup, getGroup, replaceGroup, type GroupSummary } from './api.js';
import { openModal } from './dialogs.js';
import { num } from './format.js';
import { refresh, toast } from './store.js';
import { ACTIONS, DataTable } from './table.js';

export const groupHref = (name: string, tab = 'nodes') => `#/g/${encodeURIComponent(name)}/${tab}`;

function create() {
  openModal({
    kind: 'json',
    title: 'New node group',
    intro: (
      <p>
        Regions, roles, scaling rules and a platform (<code>local</code>, <code>static</code> or <code>terraform</code>). The example is a fixed fleet of four nodes (static platform): their agents
        need a node token each. Its <code>min</code> nodes are created at once.
      </p>
    ),
    initial: JSON.stringify(exampleNodeGroup, null, 2),
    submit: 'Create node group',
    run: async (text) => {
      const g = await createGroup(text);
      toast('ok', `Node group ${g.name} created`);
      location.hash = groupHref(g.name);
      void refresh();
    },
  });
}

async function edit(name: string) {
  let config: unknown;
  try {
    config = (await getGroup(name)).value.config;
  } catch (err) {
    return toast('error', `Cannot read ${name}: ${(err as Error).message}`);
  }
  openModal({
    kind: 'json',
    title: `Replace node group ${name}`,
    intro: <p>Nodes of regions or roles it no longer has are drained. The platform cannot change while the group has nodes.</p>,
    initial: JSON.stringify(config, null, 2),
    submit: 'Replace',
    run: async (text) => {
      await replaceGroup(name, text);
      toast('ok', `Node group ${name} replaced`);
      void refresh();
    },
  });
}

function remove(g: GroupSummary) {
  openModal({
    kind: 'confirm',
    title: `Delete node group ${g.name}?`,
    danger: true,
    typeToConfirm: g.name,
    confirm: 'Delete node group',
    body: (
      <p>
        Its {num(g.nodes.total)} nodes are drained and destroyed in the background, then the group, its {num(g.streams.live + g.streams.pending)} stream bindings and {num(g.provisions)} provisions are
        gone. This cannot be undone.
      </p>
    ),
    run: async () => {
      await deleteGroup(g.name);
      toast('ok', `Node group ${g.name} is being deleted`);
      void refresh();
    },
  });
}

function states(g: GroupSummary): string {
  const byState = new Map<string, number>();
  for (const perState of Object.values(g.nodes.byRole)) for (const [s, n] of Object.entries(perState)) byState.set(s, (byState.get(s) ?? 0) + n);
  return [...byState].map(([s, n]) => `${n} ${s}`).join(', ') || 'none';
}

export function GroupsView({ groups, error }: { groups: GroupSummary[] | null; error: string | null }) {
  return (
    <section aria-labelledby="groups-h">
      <div class="section-head">
        <h2 id="groups-h">Node groups</h2>
        <button type="button" class="primary" onClick={create}>
          New node group
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {groups === null ? (
        <p class="muted">Loading…</p>
      ) : groups.length === 0 ? (
        <p class="muted">No node group yet.</p>
      ) : (
        <DataTable class="groups stack" caption="Node groups" columns={['Group', 'Platform', 'Regions', 'Nodes', 'Streams live · pending', 'Provisions', 'Status', ACTIONS]}>
          <tbody>
            {groups.map((g) => (
              <tr key={g.name} data-group={g.name}>
                <th scope="row" data-label="Group">
                  <a href={groupHref(g.name)}>{g.name}</a>
                </th>
                <td data-label="Platform">{g.platform}</td>
                <td data-label="Regions">{g.regions.join(', ')}</td>
                <td data-label="Nodes">
                  {num(g.nodes.total)} <span class="sub">{states(g)}</span>
                </td>
                <td data-label="Streams live · pending" class="num">
                  {num(g.streams.live)} · {num(g.streams.pending)}
                </td>
                <td data-label="Provisions" class="num">
                  {num(g.provisions)}
                </td>
                <td data-label="Status">
                  <span class={`badge tone-${g.status === 'deleting' ? 'warn' : g.ready ? 'ok' : 'bad'}`}>{g.status === 'deleting' ? 'deleting' : g.ready ? 'ready' : 'restarting'}</span>
                </td>
                <td data-label="Actions" class="actions">
                  <button type="button" onClick={() => void edit(g.name)} disabled={g.status === 'deleting'} aria-label={`Replace node group ${g.name}`}>
                    Edit
                  </button>
                  <button type="button" class="danger-outline" onClick={() => remove(g)} disabled={g.status === 'deleting'} aria-label={`Delete node group ${g.name}`}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </DataTable>
      )}
    </section>
  );
}
