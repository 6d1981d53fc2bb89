// The group's provisions (ABR ladders): read, create, replace and delete them. A ladder is edited
// as the JSON the API takes; the service's refusals come back field by field.
import { createProvision, deleteProvision, replaceProvision, type GroupDetail, type Provision } from './api.js';
import { openModal } from './dialogs.js';
import { ago, bitrate } from './format.js';
import { refresh, toast } from './store.js';
import { ACTIONS, DataTable } from './table.js';

function template(detail: GroupDetail): string {
  const region = detail.regions[0] ?? 'region';
  return JSON.stringify(
    {
      streamName: 'show',
      region,
      streams: [
        { name: 'show_720', level: 1, videoBR: 2_500_000, videoWidth: 1280, videoHeight: 720, videoFPS: 30, audioBR: 128_000 },
        { name: 'show_360', level: 2, videoBR: 800_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 },
      ],
    },
    null,
    2,
  );
}

const intro = (
  <p>
    A ladder of 1–16 renditions, names and levels unique (level 1 is the best quality); bitrates in bits per second; <code>region</code> is where its renditions go. Publish the stream with{' '}
    <code>transcode=true</code> to use it.
  </p>
);

function create(detail: GroupDetail) {
  openModal({
    kind: 'json',
    title: `New provision in ${detail.name}`,
    intro,
    initial: template(detail),
    submit: 'Create provision',
    run: async (text) => {
      const p = await createProvision(detail.name, text);
      toast('ok', `Provision ${p.streamName} created`);
      void refresh();
    },
  });
}

function edit(group: string, p: Provision) {
  openModal({
    kind: 'json',
    title: `Replace provision ${p.streamName}`,
    intro: <p>A stream being transcoded now picks the new ladder up at its next publish.</p>,
    initial: JSON.stringify({ streamName: p.streamName, region: p.region, streams: p.streams }, null, 2),
    submit: 'Replace',
    run: async (text) => {
      await replaceProvision(group, p.streamName, text);
      toast('ok', `Provision ${p.streamName} replaced`);
      void refresh();
    },
  });
}

function remove(group: string, p: Provision) {
  openModal({
    kind: 'confirm',
    title: `Delete provision ${p.streamName}?`,
    danger: true,
    confirm: 'Delete provision',
    body: <p>New publishes with transcode=true are refused; a live ABR stream keeps its renditions until it ends.</p>,
    run: async () => {
      await deleteProvision(group, p.streamName);
      toast('ok', `Provision ${p.streamName} deleted`);
      void refresh();
    },
  });
}

export function ProvisionsView({ detail, provisions, more, now }: { detail: GroupDetail; provisions: Provision[] | null; more: boolean; now: number }) {
  return (
    <section aria-labelledby="provisions-h">
      <div class="section-head">
        <h2 id="provisions-h">Provisions</h2>
        <button type="button" class="primary" onClick={() => create(detail)}>
          New provision
        </button>
      </div>
      {more && provisions && <p class="notice">Showing the first {provisions.length} provisions.</p>}
      {provisions === null ? (
        <p class="muted">Loading provisions…</p>
      ) : provisions.length === 0 ? (
        <p class="muted">No provision in this group.</p>
      ) : (
        <DataTable class="provisions stack" caption="Provisions of this group" columns={['Stream', 'Region', 'Renditions', 'Updated', ACTIONS]}>
          <tbody>
            {provisions.map((p) => (
              <tr key={p.streamName} data-provision={p.streamName}>
                <th scope="row" data-label="Stream" class="mono">
                  {p.streamName}
                </th>
                <td data-label="Region">{p.region}</td>
                <td data-label="Renditions">
                  <ul class="plain">
                    {[...p.streams]
                      .sort((a, b) => a.level - b.level)
                      .map((r) => (
                        <li key={r.name}>
                          <span class="mono">{r.name}</span>{' '}
                          <span class="muted">
                            {r.videoWidth}×{r.videoHeight}@{r.videoFPS} · {bitrate(r.videoBR)}
                            {r.audioBR > 0 ? ` + ${bitrate(r.audioBR)}` : ''}
                          </span>
                        </li>
                      ))}
                  </ul>
                </td>
                <td data-label="Updated">{ago(p.updatedAt, now)}</td>
                <td data-label="Actions" class="actions">
                  <button type="button" onClick={() => edit(detail.name, p)} aria-label={`Replace provision ${p.streamName}`}>
                    Edit
                  </button>
                  <button type="button" class="danger-outline" onClick={() => remove(detail.name, p)} aria-label={`Delete provision ${p.streamName}`}>
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
