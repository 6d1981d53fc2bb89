// One stream up close (docs/dashboard.md): its publisher's bit rate over the last minutes as a live
// chart (uPlot), its codecs, resolution and uptime, its viewers per node, and ending it. Fed by
// GET /streams/{nodeGroup}/{streamName}/stats every two seconds while it is open.
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { type ApiError, endStream, type StreamStats, streamStats } from './api.js';
import { openModal } from './dialogs.js';
import { bitrate, duration, num } from './format.js';
import { refresh, toast } from './store.js';
import { DataTable } from './table.js';

const EVERY_MS = 2000;
/** Five minutes of points. */
const KEEP = 150;

function RateChart({ points }: { points: Array<[number, number]> }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const el = box.current!;
    plot.current = new uPlot(
      {
        width: Math.max(280, el.clientWidth),
        height: 180,
        scales: { x: { time: true } },
        axes: [{}, { values: (_u, ticks) => ticks.map((t) => bitrate(t)), size: 70 }],
        series: [{}, { label: 'publisher', stroke: '#2f7d5b', width: 2, value: (_u, v) => (v === null ? '—' : bitrate(v)) }],
      },
      [[], []],
      el,
    );
    const resize = () => plot.current?.setSize({ width: Math.max(280, el.clientWidth), height: 180 });
    addEventListener('resize', resize);
    return () => {
      removeEventListener('resize', resize);
      plot.current?.destroy();
    };
  }, []);
  useEffect(() => {
    plot.current?.setData([points.map((p) => p[0]), points.map((p) => p[1])]);
  }, [points]);
  return <div class="rate-chart" ref={box} role="img" aria-label={`Bit rate over the last ${points.length} readings`} />;
}

export function StreamDetail({ group, stream, onClose }: { group: string; stream: string; onClose: () => void }) {
  const [stats, setStats] = useState<StreamStats | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [points, setPoints] = useState<Array<[number, number]>>([]);
  useEffect(() => {
    let live = true;
    const read = async () => {
      try {
        const s = await streamStats(group, stream);
        if (!live) return;
        setStats(s);
        setError(null);
        if (s.publisher?.bitrate !== null && s.publisher?.bitrate !== undefined) setPoints((p) => [...p.slice(-(KEEP - 1)), [Date.now() / 1000, s.publisher!.bitrate!]]);
      } catch (e) {
        if (live) setError((e as ApiError).status === 404 ? 'This stream is no longer bound.' : (e as ApiError).detail);
      }
    };
    void read();
    const timer = setInterval(read, EVERY_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [group, stream]);

  const end = () =>
    openModal({
      kind: 'confirm',
      title: `End ${stream}?`,
      danger: true,
      confirm: 'End stream',
      body: <p>The stream is unbound now, and its publisher is disconnected at its node's next heartbeat. To publish again, a client looks it up anew.</p>,
      run: async () => {
        await endStream(group, stream);
        toast('ok', `${stream}: ended`);
        onClose();
        void refresh();
      },
    });

  const p = stats?.publisher;
  return (
    <section class="stream-detail" aria-labelledby="stream-detail-h">
      <div class="group-head">
        <h3 id="stream-detail-h" class="mono">
          {stream}
        </h3>
        <span class="spacer" />
        <button type="button" class="danger-outline" onClick={end}>
          End stream
        </button>
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <RateChart points={points} />
      {stats && (
        <dl class="tiles">
          <div class="tile">
            <dt>Bit rate in</dt>
            <dd>{p?.bitrate !== null && p?.bitrate !== undefined ? bitrate(p.bitrate) : '—'}</dd>
          </div>
          <div class="tile">
            <dt>Video</dt>
            <dd>{p?.video ? `${p.video.codec ?? '?'} ${p.video.width ?? '?'}×${p.video.height ?? '?'}${p.video.fps ? ` @ ${num(p.video.fps)}` : ''}` : '—'}</dd>
          </div>
          <div class="tile">
            <dt>Audio</dt>
            <dd>{p?.audio ? `${p.audio.codec ?? '?'}${p.audio.sampleRate ? ` ${num(p.audio.sampleRate / 1000)} kHz` : ''}` : '—'}</dd>
          </div>
          <div class="tile">
            <dt>Up for</dt>
            <dd>{stats.uptimeSeconds !== null ? duration(stats.uptimeSeconds * 1000) : '—'}</dd>
          </div>
          <div class="tile">
            <dt>Viewers</dt>
            <dd>{num(stats.viewers)}</dd>
          </div>
        </dl>
      )}
      {stats && stats.nodes.length > 0 && (
        <DataTable class="stack" caption={`Nodes carrying ${stream}`} columns={['Node', 'Role', 'Viewers', 'In', 'Out']}>
          <tbody>
            {stats.nodes.map((n) => (
              <tr key={n.nodeId}>
                <th scope="row" data-label="Node" class="mono">
                  {n.nodeId}
                </th>
                <td data-label="Role">
                  {n.role} · {n.region}
                </td>
                <td data-label="Viewers" class="num">
                  {num(n.viewers)}
                </td>
                <td data-label="In" class="num">
                  {n.bitrateIn === null ? '—' : bitrate(n.bitrateIn)}
                </td>
                <td data-label="Out" class="num">
                  {n.bitrateOut === null ? '—' : bitrate(n.bitrateOut)}
                </td>
              </tr>
            ))}
          </tbody>
        </DataTable>
      )}
    </section>
  );
}
