// The per-node series /as/v1/metrics exports (GroupModel.nodeLoads): at most `cap` nodes, the
// busiest (load over limit) first, the rest counted, so a scrape's series stay bounded.
import assert from 'node:assert/strict';
import test from 'ava';
import fc from 'fast-check';
import { GroupModel } from '../../src/model/group-model.js';
import { localPlatformGroup, parsedGroup } from '../helpers/fixtures.js';

const LIMITS = { origin: 5, edge: 20 } as const;

function model(): GroupModel {
  const g = localPlatformGroup({
    regions: ['r1'],
    roles: { origin: {}, edge: { parentRole: 'origin' } },
    rules: [
      { region: 'r1', role: 'origin', min: 0, max: 100, limit: LIMITS.origin },
      { region: 'r1', role: 'edge', min: 0, max: 100, limit: LIMITS.edge },
    ],
  });
  return new GroupModel(parsedGroup(g));
}

const share = (n: { load: number; limit: number | null }) => (n.limit ? n.load / n.limit : n.load);

test('nodeLoads keeps the cap, the busiest first, counts the rest, and reports what heartbeats said', (t) => {
  fc.assert(
    fc.property(fc.array(fc.record({ role: fc.constantFrom('origin' as const, 'edge' as const), load: fc.nat(30), ready: fc.boolean() }), { maxLength: 30 }), fc.nat(35), (nodes, cap) => {
      const m = model();
      nodes.forEach((n, i) => {
        m.addNode({ id: `n${String(i).padStart(2, '0')}`, role: n.role, region: 'r1', platform: { type: 'static', address: `10.0.0.${i + 1}` }, state: 'CREATED' }, 0);
        const metric = n.role === 'origin' ? 'connections.publisher' : 'connections.subscriber';
        m.heartbeat(`n${String(i).padStart(2, '0')}`, { ready: n.ready, metrics: { [metric]: n.load } }, 1000);
      });
      m.takeEffects();
      const { nodes: out, omitted } = m.nodeLoads(cap);
      assert.equal(out.length, Math.min(cap, nodes.length));
      assert.equal(omitted, nodes.length - out.length);
      const kept = new Set(out.map((n) => n.id));
      const all = m.nodeLoads(1000).nodes;
      assert.equal(all.length, nodes.length);
      const lowestKept = Math.min(...out.map(share));
      for (const n of all) if (!kept.has(n.id)) assert.ok(share(n) <= lowestKept, `${n.id} left out while busier than a kept node`);
      for (const n of all) {
        const given = nodes[Number(n.id.slice(1))]!;
        assert.equal(n.limit, LIMITS[given.role]);
        assert.equal(given.role === 'origin' ? n.publishers : n.subscribers, given.load);
        assert.equal(n.state, given.ready ? 'INSERVICE' : 'STARTED');
        assert.equal(n.lastHeartbeat, 1000);
      }
    }),
    { numRuns: 150 },
  );
  t.pass();
});
