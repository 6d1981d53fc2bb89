// The synthetic fleet of the selection and restart benches: one group over four regions, a tenth
// of the nodes origins (at least four) and the rest edges, and stream bindings spread over the
// origins. Records are made as a running fleet leaves them in LMDB: in service.
import { normalizeNodeGroup } from '../../src/config/node-group.js';
import type { NodeGroup } from '../../src/config/types.js';
import type { BindingRecord, NodeRecord } from '../../src/domain/records.js';

export const REGIONS = ['r1', 'r2', 'r3', 'r4'];

export function fleetGroup(): NodeGroup {
  const r = normalizeNodeGroup({
    name: 'bench',
    platform: { type: 'local' },
    regions: REGIONS.map((name, i) => ({ name, lat: 50 - 10 * i, lon: 20 * i })),
    roles: { origin: {}, edge: { parentRole: 'origin' } },
    rules: REGIONS.flatMap((region) => [
      { region, role: 'origin', min: 0, max: 1024, limit: 1e9 },
      { region, role: 'edge', min: 0, max: 1024, limit: 1e9 },
    ]),
    // Selection is measured, not the PENDING caps: the bench binds far more new streams.
    limits: { pendingBindings: 10_000_000, pendingPerToken: 10_000_000 },
  });
  if ('errors' in r) throw new Error(JSON.stringify(r.errors));
  return r.group;
}

const originsOf = (nodes: number) => Math.max(4, Math.floor(nodes / 10));

/**
 * `n` nodes; with `stored`, as LMDB holds them after a run (edges with their parent origin, an
 * agent pid that is gone), else fresh, for the model to parent as they report.
 */
export function* fleetNodes(n: number, stored: boolean): Generator<NodeRecord> {
  const origins = originsOf(n);
  for (let i = 0; i < n; i++) {
    const role = i < origins ? 'origin' : 'edge';
    const parent = stored && role === 'edge' ? `origin-${i % origins}` : null;
    const platform = stored ? { type: 'local' as const, address: '127.0.0.2', pid: 999_999_999 } : { type: 'local' as const, address: '127.0.0.2' };
    yield { id: `${role}-${i}`, group: 'bench', role, region: REGIONS[i % REGIONS.length]!, state: 'INSERVICE', stateSince: 0, createdAt: 0, platform, parent };
  }
}

/** `n` LIVE bindings, `stream-<i>`, spread over the origins of a fleet of `nodes`. */
export function* fleetBindings(n: number, nodes: number): Generator<BindingRecord> {
  const origins = originsOf(nodes);
  for (let i = 0; i < n; i++) yield { stream: `stream-${i}`, origin: `origin-${i % origins}`, state: 'LIVE', boundAt: 0, since: 0 };
}
