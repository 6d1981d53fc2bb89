// Small pieces every view shows: a state as a coloured word, and a load against its limit.
import { num, stateTone } from './format.js';

export function StateBadge({ state }: { state: string | null }) {
  return <span class={`badge tone-${stateTone(state)}`}>{state ?? 'removed'}</span>;
}

export function LoadBar({ load, limit }: { load: number; limit: number | null }) {
  const share = limit && limit > 0 ? Math.min(1, load / limit) : 0;
  return (
    <span class="load">
      <meter min={0} max={1} low={0.6} high={0.9} optimum={0} value={share} aria-hidden="true" />
      <span>
        {num(load)}
        {limit !== null ? ` / ${num(limit)}` : ''}
      </span>
    </span>
  );
}
