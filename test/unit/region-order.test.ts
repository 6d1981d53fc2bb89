import test from 'ava';
import fc from 'fast-check';
import type { NodeGroup } from '../../src/config/types.js';
import { regionOrder } from '../../src/policy/selection/region-order.js';
import { distanceKm } from '../../src/policy/selection/regions.js';

const group = (regions: Array<{ name: string; lat: number; lon: number }>) => ({ regions }) as unknown as NodeGroup;

const regions = fc.uniqueArray(
  fc.record({ name: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f'), lat: fc.double({ min: -90, max: 90, noNaN: true }), lon: fc.double({ min: -180, max: 180, noNaN: true }) }),
  {
    minLength: 1,
    maxLength: 6,
    selector: (r) => r.name,
  },
);

test('without strict, every region is tried once, the requested ones first in their order', (t) => {
  fc.assert(
    fc.property(regions, fc.integer({ min: 0, max: 100 }), (rs, seed) => {
      const names = rs.map((r) => r.name);
      const requested = names.filter((_, i) => (seed >> i) & 1);
      const order = regionOrder(group(rs), { requested });
      if (!order.ok) return false;
      return order.regions.length === names.length && new Set(order.regions).size === names.length && requested.every((r, i) => order.regions[i] === r);
    }),
  );
  t.pass();
});

test('from a location, regions come nearest first', (t) => {
  fc.assert(
    fc.property(regions, fc.double({ min: -90, max: 90, noNaN: true }), fc.double({ min: -180, max: 180, noNaN: true }), (rs, lat, lon) => {
      const order = regionOrder(group(rs), { location: { lat, lon } });
      if (!order.ok) return false;
      const d = order.regions.map((n) => {
        const r = rs.find((x) => x.name === n)!;
        return distanceKm(lat, lon, r.lat, r.lon);
      });
      return d.every((v, i) => i === 0 || d[i - 1]! <= v + 1e-9);
    }),
  );
  t.pass();
});

test('strict keeps only what was asked for, or the nearest region', (t) => {
  const g = group([
    { name: 'eu', lat: 50, lon: 8 },
    { name: 'us', lat: 39, lon: -77 },
  ]);
  t.deepEqual(regionOrder(g, { strict: true }), { ok: true, regions: ['eu'] });
  t.deepEqual(regionOrder(g, { strict: true, location: { lat: 40, lon: -74 } }), { ok: true, regions: ['us'] });
  t.deepEqual(regionOrder(g, { strict: true, requested: ['us', 'eu'] }), { ok: true, regions: ['us', 'eu'] });
  t.deepEqual(regionOrder(g, { requested: ['mars'] }), { ok: false, unknown: ['mars'] });
});
