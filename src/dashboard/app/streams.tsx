// The group's streams: where each is published (its origin, and transcoder for ABR), which edges
// carry it to how many viewers, its publisher's bit rate, and since when; one opened up close
// (stream-detail.tsx) with its live bit rate chart.
import { useState } from 'preact/hooks';
import type { Stream } from './api.js';
import { ago, bitrate, num } from './format.js';
import { StateBadge } from './badges.js';
import { StreamDetail } from './stream-detail.js';
import { DataTable } from './table.js';

export function StreamsView({ group, streams, more, now }: { group: string; streams: Stream[] | null; more: boolean; now: number }) {
  const [open, setOpen] = useState<string | null>(null);
  if (streams === null) return <p class="muted">Loading streams…</p>;
  return (
    <section aria-labelledby="streams-h">
      {open && <StreamDetail key={open} group={group} stream={open} onClose={() => setOpen(null)} />}
      <h2 id="streams-h">Streams</h2>
      {more && <p class="notice">Showing the first {streams.length} streams.</p>}
      {streams.length === 0 ? (
        <p class="muted">No stream is bound in this group. A publish lookup binds one to an origin (PENDING), and it turns LIVE when the origin reports it.</p>
      ) : (
        <DataTable class="streams stack" caption="Streams of this group" columns={['Stream', 'State', 'Origin', 'Transcoder · renditions', 'Edges (viewers)', 'Viewers', 'Rate in', 'Bound']}>
          <tbody>
            {streams.map((s) => (
              <tr key={s.name} data-stream={s.name}>
                <th scope="row" data-label="Stream">
                  <button type="button" class="link mono" onClick={() => setOpen(s.name)} aria-label={`Statistics of ${s.name}`}>
                    {s.name}
                  </button>
                </th>
                <td data-label="State">
                  <StateBadge state={s.state} />
                  <span class="sub">for {ago(s.since, now).replace(' ago', '')}</span>
                </td>
                <td data-label="Origin">
                  <span class="mono">{s.origin.nodeId}</span>
                  <span class="sub">
                    {s.origin.region ?? '?'} · {s.origin.state ?? 'gone'}
                    {s.origin.serverAddress ? ` · ${s.origin.serverAddress}` : ''}
                  </span>
                </td>
                <td data-label="Transcoder · renditions">
                  {s.transcoder ? <span class="mono">{s.transcoder.nodeId}</span> : '—'}
                  {s.renditions && <span class="sub mono">{s.renditions.join(', ')}</span>}
                </td>
                <td data-label="Edges (viewers)">
                  {s.edges.length === 0 ? (
                    '—'
                  ) : (
                    <ul class="plain">
                      {s.edges.map((e) => (
                        <li key={e.nodeId}>
                          <span class="mono">{e.nodeId}</span> <span class="muted">({num(e.subscribers)})</span>
                        </li>
                      ))}
                    </ul>
                  )}
                </td>
                <td data-label="Viewers" class="num">
                  {num(s.subscribers)}
                </td>
                <td data-label="Rate in" class="num">
                  {s.bitrate === null ? '—' : bitrate(s.bitrate)}
                </td>
                <td data-label="Bound">{ago(s.boundAt, now)}</td>
              </tr>
            ))}
          </tbody>
        </DataTable>
      )}
    </section>
  );
}
