// The selection seam: every registered strategy answers both kinds of question (a pick from the
// pools, a choice among candidates) within the rules of docs/choosing-nodes.md, and the config's
// strategy names are the registry's.
import test from 'ava';
import fc from 'fast-check';
import { parseConfig, ConfigError } from '../../src/config/load.js';
import { createSelector, STRATEGY_NAMES } from '../../src/policy/selection/registry.js';
import { nearEqualBand } from '../../src/policy/selection/two-choices.js';
import type { Candidate } from '../../src/policy/selection/selector.js';

const candidates = fc
  .array(fc.record({ heapKey: fc.integer({ min: 0, max: 100 }), limit: fc.constantFrom(50, 200, Infinity) }), { maxLength: 12 })
  .map((cs) => cs.map((c, i): Candidate => ({ id: `n${i}`, heapKey: c.heapKey, heapTie: i, heapIndex: -1, limit: c.limit })));

test('every strategy chooses among the candidates it is given, and nothing from none', (t) => {
  fc.assert(
    fc.property(fc.constantFrom(...STRATEGY_NAMES), candidates, fc.double({ min: 0, max: 1, noNaN: true }), (name, cs, r) => {
      const chosen = createSelector(name, { random: () => r % 1, nearEqual: 0.05 }).choose(cs);
      return cs.length === 0 ? chosen === undefined : cs.includes(chosen!);
    }),
  );
  t.pass();
});

test('least-loaded chooses the lightest (oldest on a tie); two-choices one within the near-equal band of the lightest', (t) => {
  fc.assert(
    fc.property(
      candidates.filter((cs) => cs.length > 0),
      fc.double({ min: 0, max: 0.999, noNaN: true }),
      (cs, r) => {
        const lightest = Math.min(...cs.map((c) => c.heapKey));
        const ll = createSelector('least-loaded', { random: () => r, nearEqual: 0.05 }).choose(cs)!;
        const oldest = cs.filter((c) => c.heapKey === lightest).sort((a, b) => a.heapTie - b.heapTie)[0]!;
        const two = createSelector('two-choices', { random: () => r, nearEqual: 0.05 }).choose(cs)!;
        return ll === oldest && two.heapKey <= lightest + nearEqualBand(0.05)(two.limit);
      },
    ),
  );
  t.pass();
});

test("the config takes the registry's strategy names, and names them when one is unknown", (t) => {
  const group = (strategy: string) => ({
    name: 'g',
    platform: { type: 'static', static: { nodes: [{ id: 'o', role: 'origin', region: 'r', address: '10.0.0.1' }] } },
    regions: [{ name: 'r', lat: 0, lon: 0 }],
    roles: { origin: {} },
    selection: { strategy },
  });
  for (const name of STRATEGY_NAMES) t.is(parseConfig({ nodeGroups: [group(name)] }, 'test').nodeGroups[0]!.selection.strategy, name);
  const err = t.throws(() => parseConfig({ nodeGroups: [group('random')] }, 'test'), { instanceOf: ConfigError });
  for (const name of STRATEGY_NAMES) t.true(err!.message.includes(name), `${err!.message} names ${name}`);
});
