// Bench 2: the cost of one selection inside a node-group actor (the GroupModel it runs, no HTTP
// and no thread hop) as the fleet grows: 1k, 10k and 100k nodes, with 1M stream bindings. The
// 1k-node run is the baseline; the goal is at most 1.5x the time per selection at 100k nodes.
// A second table shows what supervision costs the same actor per tick: its timeouts and the
// supervisor's plan, made beside the nodes, against cloning a snapshot of every node (what
// crossing to the supervisor's thread cost when the plan was made there).
import { GroupModel } from '../src/model/group-model.js';
import { planGroup } from '../src/policy/scaling/plan.js';
import { fleetBindings, fleetGroup, fleetNodes, REGIONS } from './lib/synthetic-fleet.js';
import { table } from './lib/table.js';

const BINDINGS = Number(process.env.BENCH_BINDINGS ?? 1_000_000);
const SIZES = (process.env.BENCH_NODES ?? '1000,10000,100000').split(',').map(Number);
const LOOKUPS = Number(process.env.BENCH_LOOKUPS ?? 100_000);

const streams = Array.from({ length: BINDINGS }, (_, i) => `stream-${i}`);

function build(nodes: number): { model: GroupModel; streams: string[] } {
  const group = fleetGroup();
  // Rules that allow the whole fleet, so that the plan is the steady one (no drains past max).
  for (const rule of group.rules) rule.max = nodes;
  const model = new GroupModel(group);
  const records = [...fleetNodes(nodes, false)];
  model.restore(records, fleetBindings(BINDINGS, nodes), [], 0);
  // Everyone reports in with some load, as heartbeats would.
  for (const r of records) model.heartbeat(r.id, { ready: true, metrics: { 'connections.publisher': r.role === 'origin' ? 5 : 0, 'connections.subscriber': (r.id.length * 7) % 50 } }, 1);
  model.takeEffects();
  return { model, streams };
}

function time(fn: (i: number) => void, n: number): number {
  for (let i = 0; i < Math.min(n, 20_000); i++) fn(i);
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn(i);
  return Number(process.hrtime.bigint() - start) / n;
}

/** Milliseconds of the median of `n` runs. */
function median(fn: () => void, n = 7): number {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const start = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  return times.sort((a, b) => a - b)[n >> 1]!;
}

function supervision(model: GroupModel, size: number): string[] {
  let now = 2_000;
  const tick = median(() => model.tick((now += 1000)));
  const plan = median(() => planGroup({ group: model.group, nodes: model.facts(), now, busy: new Set(), requests: [], evaluate: true }));
  const snapshot = median(() => structuredClone(model.facts()), 3);
  const ms = (x: number) => x.toFixed(1);
  return [size.toLocaleString('en'), ms(tick), ms(plan), `${((tick + plan) / 10).toFixed(1)} %`, ms(snapshot), `${(snapshot / (tick + plan)).toFixed(1)}x`];
}

function main(): void {
  const rows: Array<[number, string, number]> = [];
  const supervised: string[][] = [];
  for (const size of SIZES) {
    const { model, streams } = build(size);
    supervised.push(supervision(model, size));
    const orders = REGIONS.map((_, i) => [...REGIONS.slice(i), ...REGIONS.slice(0, i)]);
    let drained = 0;
    const sub = time((i) => {
      model.subscribe(streams[(i * 7919) % streams.length]!, orders[i % 4]!, 2);
      if (++drained % 1000 === 0) model.takeEffects();
    }, LOOKUPS);
    const sticky = time((i) => void model.publish(streams[(i * 104_729) % streams.length]!, orders[i % 4]!, 2), LOOKUPS);
    const fresh = time((i) => {
      model.publish(`new-${size}-${i}`, orders[i % 4]!, 2);
      if (i % 1000 === 0) model.takeEffects();
    }, LOOKUPS / 4);
    model.takeEffects();
    rows.push([size, 'subscribe (live stream)', sub], [size, 'publish (bound stream)', sticky], [size, 'publish (new stream)', fresh]);
    (globalThis as { gc?: () => void }).gc?.();
  }
  const base = new Map(rows.filter((r) => r[0] === SIZES[0]).map((r) => [r[1], r[2]]));
  console.log(`\nSelection inside one node-group actor (GroupModel, no HTTP, no thread hop), ${BINDINGS.toLocaleString('en')} bindings\n`);
  console.log(
    table(
      ['nodes', 'lookup', 'ns per lookup', 'lookups/s', `vs ${SIZES[0]!.toLocaleString('en')} nodes`],
      rows.map(([size, kind, ns]) => [size.toLocaleString('en'), kind, Math.round(ns), Math.round(1e9 / ns).toLocaleString('en'), `${(ns / base.get(kind)!).toFixed(2)}x`]),
    ),
  );
  console.log(`\nSupervision per tick in the same actor (median ms), ${BINDINGS.toLocaleString('en')} bindings\n`);
  console.log(table(['nodes', 'timeouts (tick)', 'plan', 'of a 1 s tick', 'snapshot of every node, cloned', 'snapshot vs tick and plan'], supervised));
}

main();
