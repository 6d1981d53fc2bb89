// Evaluation scopes: a rule's aggregates over its nodes' metrics, and one node's own metrics.
// Aggregates over no nodes are 0, so an empty region reads as idle, not as NaN.
import { compileExpression, type Aggregate, type Expression, type Kind, type NodeScope, type RuleScope } from './compile.js';

export function ruleScope(nodes: ReadonlyArray<{ metrics: Readonly<Record<string, number>> }>, limit: number): RuleScope {
  const memo = new Map<string, number>();
  return {
    limit,
    aggregate(fn: Aggregate, metric: string | null): number {
      const key = `${fn}(${metric ?? ''})`;
      const hit = memo.get(key);
      if (hit !== undefined) return hit;
      let value: number;
      if (metric === null) value = nodes.length;
      else {
        const values = nodes.map((n) => metricOf(n.metrics, metric)).filter((v): v is number => v !== undefined);
        if (fn === 'count') value = values.length;
        else if (values.length === 0) value = 0;
        else if (fn === 'sum') value = values.reduce((a, b) => a + b, 0);
        else if (fn === 'avg') value = values.reduce((a, b) => a + b, 0) / values.length;
        else if (fn === 'min') value = Math.min(...values);
        else value = Math.max(...values);
      }
      memo.set(key, value);
      return value;
    },
  };
}

/** A metric as reported: only the node's own numeric fields (never `constructor` from the prototype). */
export function metricOf(metrics: Readonly<Record<string, number>>, name: string): number | undefined {
  const v = Object.hasOwn(metrics, name) ? metrics[name] : undefined;
  return typeof v === 'number' ? v : undefined;
}

export function nodeScope(metrics: Readonly<Record<string, number>>, extra?: { metric: string; add: number }): NodeScope {
  return {
    metric: (name) => (metricOf(metrics, name) ?? 0) + (extra && extra.metric === name ? extra.add : 0),
  };
}

/** The values of an expression's aggregates, for events that say why a rule fired. */
export function termValues(expr: Expression, scope: RuleScope): Record<string, number> {
  const out: Record<string, number> = {};
  for (const t of expr.terms) out[t.text] = Math.round(scope.aggregate(t.fn, t.metric) * 1000) / 1000;
  return out;
}

const cache = new Map<string, Expression>();

/** Compiled once per thread and source: closures cannot cross to a worker, the source can. */
export function compiled(source: string, kind: 'condition'): Expression<boolean>;
export function compiled(source: string, kind: 'limit' | 'rank'): Expression<number>;
export function compiled(source: string, kind: Kind): Expression {
  const key = `${kind}\u0000${source}`;
  let expr = cache.get(key);
  if (!expr) cache.set(key, (expr = compileExpression(source, kind)));
  return expr;
}
