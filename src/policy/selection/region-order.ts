// The order in which a lookup tries a group's regions (docs/choosing-nodes.md): `?region=a,b` first when
// given, else nearest first from the client's location, else the configured order. `strict`
// keeps only the regions asked for (or the nearest one): no fallback.
import type { NodeGroup } from '../../config/types.js';
import type { Location } from '../../domain/regions.js';
import { regionsByDistance } from './regions.js';

export type RegionOrder = { ok: true; regions: string[] } | { ok: false; unknown: string[] };

/** The configured order and its first region, made once per group config (most lookups need nothing else). */
const configured = new WeakMap<NodeGroup, { all: string[]; first: string[] }>();

export function regionOrder(group: NodeGroup, options: { requested?: readonly string[]; location?: Location | null; strict?: boolean }): RegionOrder {
  let fixed = configured.get(group);
  if (!fixed) configured.set(group, (fixed = { all: group.regions.map((r) => r.name), first: group.regions.slice(0, 1).map((r) => r.name) }));
  if (!options.requested && !options.location) return { ok: true, regions: options.strict ? fixed.first : fixed.all };
  const all = fixed.all;
  const natural = options.location ? regionsByDistance(group.regions, options.location.lat, options.location.lon) : all;
  const requested = options.requested ? [...new Set(options.requested)] : undefined;
  if (requested) {
    const unknown = requested.filter((r) => !all.includes(r));
    if (unknown.length > 0) return { ok: false, unknown };
    if (options.strict) return { ok: true, regions: requested };
    return { ok: true, regions: [...requested, ...natural.filter((r) => !requested.includes(r))] };
  }
  return { ok: true, regions: options.strict ? natural.slice(0, 1) : natural };
}
