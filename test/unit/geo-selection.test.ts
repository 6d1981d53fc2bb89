// Nearest region with room, for random client coordinates and random node sets (docs/choosing-nodes.md).
import test from 'ava';
import fc from 'fast-check';
import { GroupModel } from '../../src/model/group-model.js';
import { regionOrder } from '../../src/policy/selection/region-order.js';
import { distanceKm } from '../../src/policy/selection/regions.js';
import { localPlatformGroup, parsedGroup } from '../helpers/fixtures.js';

const LIMIT = 3;

test('the answer is in the nearest region with room, falls back by distance, and strict fails instead', (t) => {
  fc.assert(
    fc.property(
      fc.uniqueArray(fc.record({ name: fc.constantFrom('a', 'b', 'c', 'd'), lat: fc.double({ min: -80, max: 80, noNaN: true }), lon: fc.double({ min: -179, max: 179, noNaN: true }) }), {
        minLength: 1,
        maxLength: 4,
        selector: (r) => r.name,
      }),
      fc.array(fc.record({ region: fc.nat(3), load: fc.integer({ min: 0, max: LIMIT }) }), { maxLength: 10 }),
      fc.double({ min: -90, max: 90, noNaN: true }),
      fc.double({ min: -180, max: 180, noNaN: true }),
      fc.boolean(),
      (regions, origins, lat, lon, strict) => {
        const g = parsedGroup({
          ...localPlatformGroup({ regions: regions.map((r) => r.name), rules: regions.map((r) => ({ region: r.name, role: 'origin', min: 0, max: 20, limit: LIMIT })) }),
          regions,
        });
        const model = new GroupModel(g);
        const placed = origins.map((o, i) => ({ id: `o${i}`, region: regions[o.region % regions.length]!.name, load: o.load }));
        for (const o of placed) {
          model.addNode({ id: o.id, role: 'origin', region: o.region, platform: { type: 'static', address: '10.0.0.1' }, state: 'CREATED' }, 0);
          model.heartbeat(o.id, { ready: true, metrics: { 'connections.publisher': o.load } }, 0);
        }
        const order = regionOrder(g, { location: { lat, lon }, strict });
        if (!order.ok) return false;
        const byDistance = [...regions].sort((x, y) => distanceKm(lat, lon, x.lat, x.lon) - distanceKm(lat, lon, y.lat, y.lon)).map((r) => r.name);
        const allowed = strict ? byDistance.slice(0, 1) : byDistance;
        const room = (region: string) => placed.some((o) => o.region === region && o.load < LIMIT);
        const expected = allowed.find(room);
        const r = model.publish('cam', order.regions, 1);
        if (expected === undefined) return !r.ok && r.status === 503;
        // Equidistant regions may come in either order; the chosen one must be as near as the expected one.
        return r.ok && room(r.node.region) && Math.abs(distanceKm(lat, lon, ...coords(regions, r.node.region)) - distanceKm(lat, lon, ...coords(regions, expected))) < 1e-6;
      },
    ),
    { numRuns: 500 },
  );
  t.pass();
});

function coords(regions: ReadonlyArray<{ name: string; lat: number; lon: number }>, name: string): [number, number] {
  const r = regions.find((x) => x.name === name)!;
  return [r.lat, r.lon];
}
