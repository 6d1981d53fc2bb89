// Rendezvous (highest random weight) hashing: which instance a node group prefers. Every instance
// computes the same order from the same list of live instances, with no coordination; an instance
// joining or leaving moves only the groups it wins or held (about 1/N of them).
import { createHash } from 'node:crypto';

function weight(group: string, instance: string): bigint {
  return createHash('sha256').update(group).update('\u0000').update(instance).digest().readBigUInt64BE(0);
}

/** The live instances in the group's order of preference, best first. */
export function rank(group: string, instances: readonly string[]): string[] {
  return [...new Set(instances)]
    .map((id) => ({ id, w: weight(group, id) }))
    .sort((a, b) => (a.w === b.w ? (a.id < b.id ? -1 : 1) : a.w > b.w ? -1 : 1))
    .map((x) => x.id);
}

/** This instance's place for the group (0: first), or the number of instances if it is not live. */
export function placeOf(group: string, instances: readonly string[], me: string): number {
  const order = rank(group, instances);
  const i = order.indexOf(me);
  return i < 0 ? order.length : i;
}

/**
 * A contender's place for a group whose lease it watches: among the live instances without the
 * lease's last owner. Once the lease is free that owner serves no more, though it may look live a
 * few seconds longer (presence lingers): the instance next in line (its standby) contends at once.
 */
export function contenderPlace(group: string, instances: readonly string[], me: string, lastOwner: string | null): number {
  return placeOf(group, lastOwner === null || lastOwner === me ? instances : instances.filter((id) => id !== lastOwner), me);
}

/**
 * The one group an owner should hand over now, if any: one it holds whose preferred instance is
 * another live one. At most one per `everyMs`, so that a joining instance takes its share gradually
 * rather than in a storm of moves.
 */
export function handover(owned: readonly string[], instances: readonly string[], me: string, lastHandoverAt: number, now: number, everyMs: number): { group: string; to: string } | null {
  if (now - lastHandoverAt < everyMs || instances.length < 2) return null;
  for (const group of [...owned].sort()) {
    const first = rank(group, instances)[0];
    if (first !== undefined && first !== me) return { group, to: first };
  }
  return null;
}

/**
 * The instance that would take the group next: the first in its order among the live instances
 * other than its owner (the first of all when it has none). It keeps a warm copy of the group's
 * log (src/cluster/standby.ts), so that taking the group over replays seconds of entries.
 */
export function standbyOf(group: string, instances: readonly string[], owner: string | null): string | undefined {
  return rank(group, instances).find((id) => id !== owner);
}
