// Scaling expressions (docs/scaling.md), parsed by jsep and compiled into closures after a type
// check: no eval, nothing but numbers, metric names, `limit`, the aggregates avg min max sum
// count, + - * /, comparisons and && || !. Errors name the column where they are.
//
// Three kinds:
//   condition (scaleOut, scaleIn): aggregates over the INSERVICE nodes of a region and role, and
//                                  `limit`; a bare metric name is an error there.
//   limit     (a rule's limit):    aggregates, no `limit` (it would read itself).
//   rank      (a rule's rank):     the node's own metrics by bare name; no aggregates.
import jsep from 'jsep';
import { unknownMetricMessage } from '../../domain/metrics.js';

export type Aggregate = 'avg' | 'min' | 'max' | 'sum' | 'count';
const AGGREGATES: ReadonlySet<string> = new Set(['avg', 'min', 'max', 'sum', 'count']);
const METRIC = /^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$/;

export interface RuleScope {
  /** The aggregate of a metric over the nodes of the rule; count() counts the nodes. */
  aggregate(fn: Aggregate, metric: string | null): number;
  limit: number;
}

export interface NodeScope {
  metric(name: string): number;
}

export type Kind = 'condition' | 'limit' | 'rank';

export interface Expression<T extends number | boolean = number | boolean> {
  source: string;
  kind: Kind;
  /** Every aggregate the expression reads, as "fn(metric)": the values a scaling event reports. */
  terms: Array<{ fn: Aggregate; metric: string | null; text: string }>;
  /** Metric names it reads (rank: the node's; rule: inside aggregates). */
  metrics: string[];
  evaluate(scope: RuleScope | NodeScope): T;
}

export class ExpressionError extends Error {
  constructor(
    readonly source: string,
    readonly position: number,
    readonly reason: string,
  ) {
    super(`${reason} at column ${position + 1} of "${source}"`);
    this.name = 'ExpressionError';
  }
}

type Type = 'number' | 'boolean';
type Fn = (scope: RuleScope & NodeScope) => number | boolean;

interface Node {
  type: string;
  [key: string]: unknown;
}

function metricName(node: Node): string | null {
  if (node.type === 'Identifier') return node.name as string;
  if (node.type === 'MemberExpression' && !node.computed) {
    const object = metricName(node.object as Node);
    const property = node.property as Node;
    if (object !== null && property.type === 'Identifier') return `${object}.${property.name as string}`;
    // jsep reads `connections.1m` as a member with a numeric literal: keep the metric's spelling.
    if (object !== null && property.type === 'Literal' && typeof property.value === 'number') return `${object}.${String(property.raw)}`;
  }
  return null;
}

/**
 * `known`: the metric names the expression may read (src/domain/metrics.ts); where it is given
 * (the config and the admin API), any other name is an error that lists the known ones. Left out
 * where an expression already accepted is compiled again (in the actors).
 */
export interface CompileOptions {
  known?: ReadonlySet<string>;
}

export function compileExpression(source: string, kind: 'condition', options?: CompileOptions): Expression<boolean>;
export function compileExpression(source: string, kind: 'limit' | 'rank', options?: CompileOptions): Expression<number>;
export function compileExpression(source: string, kind: Kind, options?: CompileOptions): Expression;
export function compileExpression(source: string, kind: Kind, options: CompileOptions = {}): Expression {
  let ast: Node;
  try {
    ast = jsep(source) as unknown as Node;
  } catch (err) {
    const e = err as Error & { index?: number; description?: string };
    throw new ExpressionError(source, Math.min(e.index ?? 0, source.length), e.description ?? e.message);
  }
  const terms: Expression['terms'] = [];
  const metrics = new Set<string>();
  const fail = (reason: string, near?: string): never => {
    const at = near ? source.indexOf(near) : -1;
    throw new ExpressionError(source, at < 0 ? 0 : at, reason);
  };
  const rule = kind !== 'rank';
  const known = (name: string) => {
    if (options.known && !options.known.has(name)) fail(unknownMetricMessage(name, options.known), name);
  };

  const walk = (node: Node): [Type, Fn] => {
    switch (node.type) {
      case 'Literal': {
        const v = node.value;
        if (typeof v === 'number' && Number.isFinite(v)) return ['number', () => v];
        if (typeof v === 'boolean') return ['boolean', () => v];
        return fail(`${JSON.stringify(v)} is not a number`, String(node.raw));
      }
      case 'Identifier':
      case 'MemberExpression': {
        const name = metricName(node);
        if (name === null) return fail('only metric names, numbers and aggregates are allowed', '[');
        if (name === 'limit') {
          if (kind !== 'condition') fail(`'limit' is not available in a ${kind} expression`, 'limit');
          return ['number', (s) => s.limit];
        }
        if (name === 'true' || name === 'false') return ['boolean', () => name === 'true'];
        if (!METRIC.test(name)) return fail(`'${name}' is not a metric name`, name);
        if (rule) return fail(`metric '${name}' needs an aggregate here, such as avg(${name})`, name);
        known(name);
        metrics.add(name);
        return ['number', (s) => s.metric(name)];
      }
      case 'CallExpression': {
        const callee = metricName(node.callee as Node);
        const args = node.arguments as Node[];
        if (callee === null || !AGGREGATES.has(callee)) return fail(`unknown function '${callee ?? '?'}'; use avg, min, max, sum or count`, callee ?? '(');
        if (!rule) return fail(`aggregates such as ${callee}() are not allowed in a rank expression: it reads one node's metrics`, callee);
        const fn = callee as Aggregate;
        if (args.length > 1) return fail(`${fn}() takes one metric name`, fn);
        if (args.length === 0 && fn !== 'count') return fail(`${fn}() needs a metric name, such as ${fn}(connections.subscriber)`, fn);
        const metric = args[0] ? metricName(args[0]) : null;
        if (args[0] && (metric === null || !METRIC.test(metric) || metric === 'limit')) return fail(`${fn}() takes a metric name`, fn);
        if (metric) {
          known(metric);
          metrics.add(metric);
        }
        terms.push({ fn, metric, text: `${fn}(${metric ?? ''})` });
        return ['number', (s) => s.aggregate(fn, metric)];
      }
      case 'UnaryExpression': {
        const [t, f] = walk(node.argument as Node);
        if (node.operator === '!') {
          if (t !== 'boolean') fail("'!' needs a comparison after it", '!');
          return ['boolean', (s) => !f(s)];
        }
        if (node.operator === '-' || node.operator === '+') {
          if (t !== 'number') fail(`'${String(node.operator)}' needs a number`, String(node.operator));
          return node.operator === '-' ? ['number', (s) => -(f(s) as number)] : ['number', f];
        }
        return fail(`operator '${String(node.operator)}' is not allowed`, String(node.operator));
      }
      case 'BinaryExpression': {
        const op = node.operator as string;
        const [lt, lf] = walk(node.left as Node);
        const [rt, rf] = walk(node.right as Node);
        const both = (want: Type, what: string) => {
          if (lt !== want || rt !== want) fail(`'${op}' needs ${what} on both sides`, op);
        };
        switch (op) {
          case '+':
            both('number', 'numbers');
            return ['number', (s) => (lf(s) as number) + (rf(s) as number)];
          case '-':
            both('number', 'numbers');
            return ['number', (s) => (lf(s) as number) - (rf(s) as number)];
          case '*':
            both('number', 'numbers');
            return ['number', (s) => (lf(s) as number) * (rf(s) as number)];
          case '/':
            both('number', 'numbers');
            // A ratio over no nodes is 0, not NaN: an empty region neither scales out nor in on it.
            return [
              'number',
              (s) => {
                const d = rf(s) as number;
                return d === 0 ? 0 : (lf(s) as number) / d;
              },
            ];
          case '<':
          case '<=':
          case '>':
          case '>=': {
            both('number', 'numbers');
            const cmp = { '<': (a: number, b: number) => a < b, '<=': (a: number, b: number) => a <= b, '>': (a: number, b: number) => a > b, '>=': (a: number, b: number) => a >= b }[op];
            return ['boolean', (s) => cmp(lf(s) as number, rf(s) as number)];
          }
          case '==':
          case '!=':
            if (lt !== rt) fail(`'${op}' compares two numbers or two conditions`, op);
            return ['boolean', op === '==' ? (s) => lf(s) === rf(s) : (s) => lf(s) !== rf(s)];
          case '&&':
          case '||':
            both('boolean', 'conditions');
            return ['boolean', op === '&&' ? (s) => (lf(s) as boolean) && (rf(s) as boolean) : (s) => (lf(s) as boolean) || (rf(s) as boolean)];
          default:
            return fail(`operator '${op}' is not allowed; use + - * /, comparisons, && || !`, op);
        }
      }
      case 'Compound':
        return fail('one expression only', ',');
      default:
        return fail(`${node.type.replace(/Expression$/, '').toLowerCase()} expressions are not allowed`);
    }
  };

  const [type, fn] = walk(ast);
  const want: Type = kind === 'condition' ? 'boolean' : 'number';
  if (type !== want) throw new ExpressionError(source, 0, kind === 'condition' ? 'must be a condition, such as avg(cpu.load) > 0.8' : 'must be a number, not a condition');
  return { source, kind, terms, metrics: [...metrics], evaluate: fn as Expression['evaluate'] };
}
