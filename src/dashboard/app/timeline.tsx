// What happened, newest first, as the service's event stream tells it (live): node states,
// scaling decisions and refusals, stream binds and moves, platform progress and errors.
import { useState } from 'preact/hooks';
import type { EventRecord } from './api.js';
import { clock, describe, eventTone, KINDS, kindOf, type Kind } from './format.js';

function Row({ e }: { e: EventRecord }) {
  return (
    <li class={`event tone-${eventTone(e)}`} data-type={e.type}>
      <time dateTime={new Date(e.at).toISOString()} title={new Date(e.at).toLocaleString()}>
        {clock(e.at)}
      </time>
      <span class="event-type">{e.type}</span>
      <span class="event-group muted">{e.group}</span>
      <details>
        <summary>{describe(e)}</summary>
        <pre>{JSON.stringify(e, null, 2)}</pre>
      </details>
    </li>
  );
}

/** The last few events of one group, for its overview. */
export function RecentEvents({ events, group, onMore }: { events: EventRecord[]; group: string; onMore: () => void }) {
  const mine = events
    .filter((e) => e.group === group)
    .slice(-8)
    .reverse();
  return (
    <section aria-labelledby="recent-h">
      <div class="section-head">
        <h2 id="recent-h">Latest events</h2>
        <button type="button" class="link" onClick={onMore}>
          Whole timeline
        </button>
      </div>
      {mine.length === 0 ? (
        <p class="muted">Nothing yet.</p>
      ) : (
        <ol class="timeline">
          {mine.map((e) => (
            <Row key={e.seq} e={e} />
          ))}
        </ol>
      )}
    </section>
  );
}

export function Timeline({ events, group }: { events: EventRecord[]; group: string | null }) {
  const [off, setOff] = useState<ReadonlySet<Kind>>(new Set());
  const [onlyGroup, setOnlyGroup] = useState(true);
  const [text, setText] = useState('');
  const needle = text.toLowerCase();
  const shown: EventRecord[] = [];
  for (let i = events.length - 1; i >= 0 && shown.length < 300; i--) {
    const e = events[i]!;
    if (off.has(kindOf(e)) || (onlyGroup && group && e.group !== group)) continue;
    if (needle && !`${e.type} ${describe(e)}`.toLowerCase().includes(needle)) continue;
    shown.push(e);
  }
  const toggle = (k: Kind) => {
    const next = new Set(off);
    if (next.has(k)) next.delete(k);
    else next.add(k);
    setOff(next);
  };
  return (
    <section aria-labelledby="timeline-h">
      <h2 id="timeline-h">Timeline</h2>
      {/* biome-ignore lint/a11y/useSemanticElements: a toolbar of toggle buttons, not a form: a fieldset would need a legend and its own styling for nothing */}
      <div class="toolbar" role="group" aria-label="Which events">
        {KINDS.map((k) => (
          <button type="button" key={k} class="chip" aria-pressed={!off.has(k)} onClick={() => toggle(k)}>
            {k}
          </button>
        ))}
        {group && (
          <label class="check">
            <input type="checkbox" checked={onlyGroup} onChange={(e) => setOnlyGroup((e.target as HTMLInputElement).checked)} /> only {group}
          </label>
        )}
        <label class="filter">
          <span class="visually-hidden">Search events</span>
          <input type="search" placeholder="Search…" value={text} onInput={(e) => setText((e.target as HTMLInputElement).value)} />
        </label>
      </div>
      <p class="muted small">
        {shown.length} shown of the last {events.length} events (the service keeps a bounded log; this tab keeps the last 1000).
      </p>
      <ol class="timeline" aria-live="off">
        {shown.map((e) => (
          <Row key={e.seq} e={e} />
        ))}
      </ol>
    </section>
  );
}
