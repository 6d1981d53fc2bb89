import test from 'ava';
import fc from 'fast-check';
import { compileExpression, ExpressionError } from '../../src/policy/expressions/compile.js';
import { nodeScope, ruleScope, termValues } from '../../src/policy/expressions/scope.js';

const nodes: Array<{ metrics: Record<string, number> }> = [
  { metrics: { 'connections.subscriber': 100, 'cpu.load': 0.5 } },
  { metrics: { 'connections.subscriber': 200, 'cpu.load': 0.9 } },
  { metrics: {} },
];

test('rule conditions read aggregates over the nodes and the limit', (t) => {
  const scope = ruleScope(nodes, 200);
  t.true(compileExpression('avg(connections.subscriber) > 0.6 * limit', 'condition').evaluate(scope), 'the average of the nodes that report it: 150 > 120');
  t.false(compileExpression('avg(connections.subscriber) > 0.8 * limit', 'condition').evaluate(scope));
  t.is(scope.aggregate('avg', 'connections.subscriber'), 150);
  t.is(scope.aggregate('count', null), 3);
  t.is(scope.aggregate('count', 'cpu.load'), 2);
  t.is(scope.aggregate('max', 'cpu.load'), 0.9);
  t.is(scope.aggregate('sum', 'connections.subscriber'), 300);
  t.true(compileExpression('count() >= 3 && !(max(cpu.load) < 0.5) || false', 'condition').evaluate(scope));
  t.is(compileExpression('sum(connections.subscriber) / count()', 'limit').evaluate(scope), 100);
  t.is(error('limit * 2', 'limit'), "'limit' is not available in a limit expression @1");
  t.is(compileExpression('avg(nothing.here) / count(nothing.here)', 'limit').evaluate(scope), 0, 'x / 0 is 0');
  const expr = compileExpression('avg(connections.subscriber) > 0.6 * limit && max(cpu.load) < 1', 'condition');
  t.deepEqual(termValues(expr, scope), { 'avg(connections.subscriber)': 150, 'max(cpu.load)': 0.9 });
});

test("rank expressions read one node's metrics", (t) => {
  const rank = compileExpression('connections.subscriber + 100 * cpu.load', 'rank');
  t.is(rank.evaluate(nodeScope({ 'connections.subscriber': 10, 'cpu.load': 0.25 })), 35);
  t.is(rank.evaluate(nodeScope({ 'connections.subscriber': 10 }, { metric: 'connections.subscriber', add: 2 })), 12);
  t.deepEqual(rank.metrics.sort(), ['connections.subscriber', 'cpu.load']);
});

const error = (source: string, kind: 'condition' | 'limit' | 'rank') => {
  try {
    compileExpression(source, kind);
  } catch (e) {
    if (e instanceof ExpressionError) return `${e.reason} @${e.position + 1}`;
    throw e;
  }
  return 'compiled';
};

test('bad expressions are refused with the reason and the column', (t) => {
  t.is(error('avg(cpu.load) >', 'condition'), 'Expected expression after > @16');
  t.is(error('avg(cpu.load)', 'condition'), 'must be a condition, such as avg(cpu.load) > 0.8 @1');
  t.is(error('cpu.load > 1', 'condition'), "metric 'cpu.load' needs an aggregate here, such as avg(cpu.load) @1");
  t.is(error('avg(cpu.load) > 1 && median(cpu.load) > 2', 'condition'), "unknown function 'median'; use avg, min, max, sum or count @22");
  t.is(error('avg(cpu.load) > limit', 'rank'), "aggregates such as avg() are not allowed in a rank expression: it reads one node's metrics @1");
  t.is(error('limit', 'rank'), "'limit' is not available in a rank expression @1");
  t.is(error('avg(cpu.load) & 1', 'limit'), "operator '&' is not allowed; use + - * /, comparisons, && || ! @15");
  t.is(error('constructor.constructor("x")()', 'limit'), "unknown function '?'; use avg, min, max, sum or count @24");
  t.is(compileExpression('constructor + toString', 'rank').evaluate(nodeScope({})), 0, 'names from the prototype are not metrics');
  t.is(error('avg(cpu.load) > "1"', 'condition'), '"1" is not a number @17');
  t.is(error('1 > 0 ? 1 : 0', 'limit'), 'conditional expressions are not allowed @1');
  t.is(error('this', 'limit'), 'this expressions are not allowed @1');
  t.is(error('avg(a, b)', 'limit'), 'avg() takes one metric name @1');
  t.is(error('1 + (2 > 1)', 'limit'), "'+' needs numbers on both sides @3");
});

test('any string either compiles or fails with an ExpressionError, never anything else', (t) => {
  const pieces = [
    'avg(',
    'min(',
    'count()',
    'cpu.load',
    'connections.subscriber',
    ')',
    ' > ',
    ' < ',
    ' && ',
    ' || ',
    '!',
    '1',
    '0.6',
    ' * ',
    ' / ',
    'limit',
    '(',
    '__proto__',
    'constructor',
    '[0]',
    '"x"',
    ',',
    '?',
    ':',
  ];
  fc.assert(
    fc.property(
      fc.oneof(
        fc.string(),
        fc.array(fc.constantFrom(...pieces), { maxLength: 12 }).map((p) => p.join('')),
      ),
      fc.constantFrom<'condition' | 'limit' | 'rank'>('condition', 'limit', 'rank'),
      (source, kind) => {
        try {
          const e = compileExpression(source, kind);
          const v = e.evaluate({ ...ruleScope(nodes, 10), ...nodeScope({ 'cpu.load': 1 }) });
          return kind === 'condition' ? typeof v === 'boolean' : typeof v === 'number';
        } catch (err) {
          return err instanceof ExpressionError && err.position >= 0 && err.position <= source.length;
        }
      },
    ),
    { numRuns: 2000 },
  );
  t.pass();
});
