// Rules may read only the metrics nodes report (docs/nodes.md) and the operator's metrics.custom:
// an unknown name is refused where it is given, with the names that exist.
import test from 'ava';
import fc from 'fast-check';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { knownMetrics, NODE_METRIC_NAMES } from '../../src/domain/metrics.js';
import { compileExpression, ExpressionError } from '../../src/policy/expressions/compile.js';
import { staticGroup } from '../helpers/fixtures.js';

const metricName = fc.stringMatching(/^[A-Za-z][A-Za-z0-9_]{0,8}(\.[A-Za-z][A-Za-z0-9_]{0,8}){0,2}$/).filter((n) => !['limit', 'true', 'false', 'avg', 'min', 'max', 'sum', 'count'].includes(n));

test('any name outside the known set is refused in every kind of expression, naming the known ones; known names compile', (t) => {
  fc.assert(
    fc.property(metricName, fc.array(metricName, { maxLength: 3 }), (name, custom) => {
      const known = knownMetrics(custom);
      for (const [source, kind] of [
        [`avg(${name}) > 1`, 'condition'],
        [`max(${name}) * 2`, 'limit'],
        [`${name} + 1`, 'rank'],
      ] as const) {
        if (known.has(name)) {
          compileExpression(source, kind, { known });
          continue;
        }
        const e = t.throws(() => compileExpression(source, kind, { known }), { instanceOf: ExpressionError });
        if (!e!.reason.includes(`unknown metric '${name}'`)) return false;
        if (!NODE_METRIC_NAMES.every((m) => e!.reason.includes(m)) || !custom.every((m) => e!.reason.includes(m))) return false;
        if (e!.position !== source.indexOf(name)) return false;
        // Without a known set (the actors compiling what was accepted), the name reads as before.
        compileExpression(source, kind);
      }
      return true;
    }),
    { numRuns: 200 },
  );
});

test("the README's old limit avg(memory.total) / 50000000 stops the start with the metrics that exist; metrics.custom allows an agent's own", (t) => {
  const group = staticGroup({ rules: [{ region: 'r1', role: 'edge', min: 0, max: 2, limit: 'avg(memory.total) / 50000000' }] });
  const e = t.throws(() => parseConfig({ nodeGroups: [group], geoip: { enabled: false } }, 'test.json'), { instanceOf: ConfigError });
  t.regex(e!.message, /nodeGroups\[0\]\.rules\[0\]\.limit = "avg\(memory\.total\) \/ 50000000": unknown metric 'memory\.total': nodes report connections\.publisher, .*memory\.used.* metrics\.custom/);
  const config = parseConfig({ nodeGroups: [group], geoip: { enabled: false }, metrics: { custom: ['memory.total'] } }, 'test.json');
  t.is(config.nodeGroups[0]!.rules[0]!.limit, 'avg(memory.total) / 50000000');
  t.deepEqual(config.metrics, { custom: ['memory.total'], nodeSeries: 500, streamSeries: 50 });
  t.throws(() => parseConfig({ nodeGroups: [], metrics: { custom: ['not a name'] } }, 'test.json'), { message: /metrics\.custom\[0\]/ });
});

test("the agents report every machine metric the list names, cpu.usage as cpu.load's percentage (SM2's name)", async (t) => {
  const { systemMetrics } = await import('../../src/agent/system-metrics.js');
  const m = systemMetrics();
  for (const name of Object.keys(m)) t.true(NODE_METRIC_NAMES.includes(name), name);
  t.true(NODE_METRIC_NAMES.includes('cpu.usage'));
  t.true(Math.abs(m['cpu.usage']! - Math.min(100, m['cpu.load']! * 100)) <= 1);
});
