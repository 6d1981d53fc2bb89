// Reads SM2's answers need from a group's actor, through the calls our own routes use: SM2 lists
// whole collections where we page, and looks one stream up where we list. Nothing here is a copy
// of state: each read asks the actor.
import type { GroupHandle } from '../../../actors/group-handle.js';
import type { NodeView, StreamView } from '../../model/views.js';
import type { Provision } from '../../domain/records.js';
import { cursorBefore } from './names.js';

const PAGE = 1000;

async function all<T>(fetch: (after: string | undefined, limit: number) => Promise<T[]>, keyOf: (item: T) => string): Promise<T[]> {
  const out: T[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await fetch(after, PAGE);
    out.push(...page);
    if (page.length < PAGE) return out;
    after = keyOf(page.at(-1)!);
  }
}

export const allStreams = (h: GroupHandle): Promise<StreamView[]> =>
  all(
    (after, limit) => h.call('listStreams', after, limit),
    (v) => v.name,
  );
export const allNodes = (h: GroupHandle): Promise<NodeView[]> =>
  all(
    async (after, limit) => (await h.call('detail', after, limit)).nodes,
    (n) => n.id,
  );
export const allProvisions = (h: GroupHandle): Promise<Provision[]> =>
  all(
    (after, limit) => h.call('listProvisions', after, limit),
    (p) => p.streamName,
  );

/** One stream's binding (PENDING or LIVE), or null: the first of a list that starts just before it. */
export async function oneStream(h: GroupHandle, name: string): Promise<StreamView | null> {
  const [first] = await h.call('listStreams', cursorBefore(name), 1);
  return first?.name === name ? first : null;
}

/**
 * The provision a name belongs to: its own, or the one that has it as a rendition (SM2's clients
 * ask for a transcoder by a variant's guid too). A scan of the group's provisions when the name is
 * not one: transcode lookups are few, and provisions an admin's.
 */
export async function provisionOwning(h: GroupHandle, name: string): Promise<Provision | null> {
  const own = await h.call('getProvision', name);
  if (own) return own;
  return (await allProvisions(h)).find((p) => p.streams.some((r) => r.name === name)) ?? null;
}
