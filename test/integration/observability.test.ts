// The observability pack (config/prometheus, config/grafana) against real Prometheus: the alert
// rules pass `promtool check rules` and their own unit tests (`promtool test rules`), a real
// Prometheus scraping a real service evaluates every dashboard query without error and sees the
// per-node series, and a FAULT node puts its alert in Prometheus's list. Prometheus and promtool
// come from Debian's prometheus package (the setup script installs it).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { parseConfig } from '../../src/config/load.js';
import { projectPath } from '../../src/paths.js';
import { FakeNode } from '../helpers/fake-node.js';
import { waitForEvents } from '../helpers/events.js';
import { staticGroup, startTestService, tempDir } from '../helpers/service.js';
import { until } from '../helpers/until.js';
import { freePort } from '../helpers/ports.js';

const RULES = projectPath('config', 'prometheus', 'switchyard-alerts.yml');
const RULE_TESTS = projectPath('config', 'prometheus', 'switchyard-alerts.test.yml');
const DASHBOARD = projectPath('config', 'grafana', 'switchyard.json');
/** Metrics the pack may name before the service has them: the lease arrives with cluster mode. */
const LATER = new Set(['switchyard_lease_lost_total']);
const SCRAPER_SECRET = 'prometheus-scrapes-with-this-long-secret';

function tool(name: 'promtool' | 'prometheus'): string {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim();
  if (!found) throw new Error(`${name} is not installed: run npm run setup (Debian's prometheus package)`);
  return found;
}

interface Panel {
  type: string;
  title: string;
  id: number;
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: Array<{ expr: string; refId: string; datasource: { uid: string } }>;
}
const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { uid: string; panels: Panel[]; templating: { list: Array<{ name: string; type: string; query: unknown }> } };
const queries = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
/** As Grafana sends them with "All" selected. */
const concrete = (expr: string) => expr.replaceAll('$group', '.*').replaceAll('$region', '.*').replaceAll('$__rate_interval', '1m');

/** The metric names a PromQL text refers to (those of this service). */
const namesIn = (text: string) => new Set([...text.matchAll(/\b(switchyard_[a-z0-9_]+)/g)].map((m) => m[1]!));

test("promtool accepts the alert rules and the example configuration, and the rules' unit tests pass: each alert fires on its series after its `for`, and not before", (t) => {
  const promtool = tool('promtool');
  const check = spawnSync(promtool, ['check', 'rules', RULES], { encoding: 'utf8' });
  t.is(check.status, 0, check.stdout + check.stderr);
  t.regex(check.stdout, /SUCCESS: 9 rules found/);
  const unit = spawnSync(promtool, ['test', 'rules', RULE_TESTS], { encoding: 'utf8' });
  t.is(unit.status, 0, unit.stdout + unit.stderr);
  // The example Prometheus configuration, with its rule file where this checkout has it.
  const dir = tempDir('switchyard-promtool-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'prometheus.yml'), readFileSync(projectPath('config', 'prometheus', 'prometheus.yml'), 'utf8').replace('/etc/prometheus/switchyard-alerts.yml', RULES));
  const config = spawnSync(promtool, ['check', 'config', join(dir, 'prometheus.yml')], { encoding: 'utf8' });
  t.is(config.status, 0, config.stdout + config.stderr);
  for (const alert of ['SwitchyardNodesFault', 'SwitchyardNoCapacity', 'SwitchyardActorRestarts', 'SwitchyardStoreUnavailable', 'SwitchyardLeaseLost']) {
    t.true(readFileSync(RULE_TESTS, 'utf8').includes(`alertname: ${alert}`), `${alert} has a unit test`);
  }
});

test('the dashboard is well formed: unique ids, panels on the 24-column grid without overlap, every query on the datasource variable', (t) => {
  t.is(dashboard.uid, 'switchyard');
  const ids = dashboard.panels.map((p) => p.id);
  t.is(new Set(ids).size, ids.length);
  const cells = new Set<string>();
  for (const p of dashboard.panels) {
    const g = p.gridPos;
    t.true(g.x >= 0 && g.w > 0 && g.x + g.w <= 24, `${p.title} fits the grid`);
    for (let x = g.x; x < g.x + g.w; x++)
      for (let y = g.y; y < g.y + g.h; y++) {
        t.false(cells.has(`${x},${y}`), `${p.title} overlaps another panel at ${x},${y}`);
        cells.add(`${x},${y}`);
      }
    for (const target of p.targets ?? []) t.is(target.datasource.uid, '${datasource}', p.title);
  }
  t.deepEqual(
    dashboard.templating.list.map((v) => v.name),
    ['datasource', 'group', 'region'],
  );
  t.true(queries.length >= 25);
});

test('a real Prometheus scraping a real service: every dashboard query evaluates, per-node series carry each node, and a FAULT node raises its alert', async (t) => {
  const prometheus = tool('prometheus');
  const nodes = [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'e1', role: 'edge', region: 'r1' },
    { id: 'e2', role: 'edge', region: 'r2' },
  ];
  // As on a public bind: /metrics wants an admin token, or the scraper's secret Prometheus sends.
  const svc = await startTestService({
    groups: [staticGroup({ nodes, regions: ['r1', 'r2'], timing: { nodeTimeout: '10m', faultTimeout: '10m', stateTimeouts: { CREATED: '500ms' } } })],
    config: { server: { host: '127.0.0.1', port: 0, metricsAuth: 'admin' } },
    env: { SWITCHYARD_METRICS_TOKEN: SCRAPER_SECRET },
  });
  t.teardown(() => svc.close());
  // o1 and e1 report once and stay in service (nodeTimeout is long); e2 never reports, and goes
  // FAULT when it overstays CREATED: no clock in the test decides which node is where.
  const faulted = waitForEvents(svc.url, svc.adminToken, (seen) => seen.some((e) => e.type === 'node.state' && e.nodeId === 'e2' && e.to === 'FAULT'));
  await new FakeNode(svc, 'g', 'o1').beat({ publishers: 1 });
  await new FakeNode(svc, 'g', 'e1').beat({ subscribers: 3 });
  await faulted;

  // The service's own exposition names every metric the pack uses.
  t.is((await svc.get('/as/v1/metrics', null)).status, 401);
  t.is((await svc.get('/as/v1/metrics', `${SCRAPER_SECRET}x`)).status, 401);
  t.is((await svc.get('/as/v1/nodegroups', SCRAPER_SECRET)).status, 401, 'the scraper secret opens /metrics only');
  const exposition = (await svc.get('/as/v1/metrics', SCRAPER_SECRET)).text;
  const exposed = new Set([...exposition.matchAll(/^# TYPE (\S+)/gm)].map((m) => m[1]!));
  const used = new Set([...namesIn(readFileSync(RULES, 'utf8')), ...queries.flatMap((q) => [...namesIn(q.expr)])]);
  for (const name of used) t.true(exposed.has(name) || exposed.has(name.replace(/_(bucket|count|sum)$/, '')) || LATER.has(name), `${name} is exposed`);
  t.regex(exposition, /^switchyard_node_load\{group="g",region="r1",role="edge",node="e1"\} 3$/m);
  t.regex(exposition, /^switchyard_node_limit\{group="g",region="r1",role="edge",node="e1"\} 5$/m);
  t.regex(exposition, /^switchyard_node_state\{group="g",region="r2",role="edge",node="e2",state="FAULT"\} 1$/m);
  t.regex(exposition, /^switchyard_node_connections\{group="g",region="r1",role="origin",node="o1",kind="publisher"\} 1$/m);
  t.regex(exposition, /^switchyard_events_total\{type="actor.crashed"\} 0$/m, 'alerted counters exist at 0 from the start');
  t.regex(exposition, /^switchyard_store_unavailable\{group="g"\} 0$/m);

  const dir = tempDir('switchyard-prometheus-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const target = new URL(svc.url).host;
  mkdirSync(join(dir, 'data'));
  writeFileSync(join(dir, 'scraper-secret'), SCRAPER_SECRET, { mode: 0o600 });
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global:\n  scrape_interval: 1s\n  evaluation_interval: 1s',
      `rule_files:\n  - ${JSON.stringify(RULES)}`,
      `scrape_configs:\n  - job_name: switchyard\n    metrics_path: /as/v1/metrics\n    authorization:\n      credentials_file: ${JSON.stringify(join(dir, 'scraper-secret'))}\n    static_configs:\n      - targets: [${JSON.stringify(target)}]`,
    ].join('\n'),
  );
  const proc = spawn(prometheus, [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const log: string[] = [];
  proc.stderr.on('data', (c: Buffer) => log.push(c.toString()));
  const exited = new Promise((r) => proc.once('exit', r));
  t.teardown(async () => {
    proc.kill('SIGTERM');
    await exited;
  });
  const api = `http://127.0.0.1:${port}/api/v1`;
  const query = async (expr: string) =>
    (await (await fetch(`${api}/query?${new URLSearchParams({ query: expr })}`)).json()) as {
      status: string;
      error?: string;
      data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
    };
  await until(async () => (await fetch(`${api}/targets`).catch(() => null))?.ok, 20_000, `Prometheus to answer (${log.join('').slice(-500)})`);
  await until(async () => (await query('up{job="switchyard"} == 1')).data.result.length === 1, 20_000, 'the service scraped');

  // Prometheus's rule manager loaded the file and evaluates every rule without error.
  const rules = (await (await fetch(`${api}/rules`)).json()) as { data: { groups: Array<{ rules: Array<{ name: string; health: string; lastError?: string }> }> } };
  const loaded = rules.data.groups.flatMap((g) => g.rules);
  t.is(loaded.length, 9);
  for (const r of loaded) t.not(r.health, 'err', `${r.name}: ${r.lastError ?? ''}`);

  // The FAULT node's alert becomes pending (its `for` is a minute) with the node's group, region and role.
  const alert = await until(
    async () => {
      const alerts = (await (await fetch(`${api}/alerts`)).json()) as { data: { alerts: Array<{ labels: Record<string, string>; state: string }> } };
      return alerts.data.alerts.find((a) => a.labels.alertname === 'SwitchyardNodesFault');
    },
    20_000,
    'SwitchyardNodesFault in Prometheus',
  );
  t.like(alert.labels, { group: 'g', region: 'r2', role: 'edge', severity: 'warning' });
  t.false((await query('ALERTS{alertname=~"SwitchyardStoreUnavailable|SwitchyardActorRestarts|SwitchyardNoCapacity"}')).data.result.length > 0, 'a healthy service raises nothing else');

  // Every dashboard query is valid PromQL over these series; the per-node ones see each node.
  for (const q of queries) {
    const r = await query(concrete(q.expr));
    t.is(r.status, 'success', `${q.panel}: ${q.expr}: ${r.error ?? ''}`);
  }
  const perNode = await query(concrete(queries.find((q) => q.panel === 'Load over limit, per node')!.expr));
  const share = Object.fromEntries(perNode.data.result.map((s) => [s.metric.node, Number(s.value[1])]));
  t.is(share.e1, 3 / 5);
  t.is(share.o1, 1 / 3);
  const states = await query(concrete(queries.find((q) => q.panel === 'Nodes by state')!.expr));
  t.deepEqual(Object.fromEntries(states.data.result.map((s) => [s.metric.state, Number(s.value[1])])), { INSERVICE: 2, FAULT: 1 });
});

test('per-node series are bounded by metrics.nodeSeries: the busiest nodes keep theirs, and the rest are counted', async (t) => {
  const nodes = ['e1', 'e2', 'e3', 'e4'].map((id) => ({ id, role: 'edge', region: 'r1' }));
  const svc = await startTestService({
    groups: [
      staticGroup({ nodes, regions: ['r1'], roles: { origin: {}, edge: { parentRole: 'origin' } }, rules: [{ region: 'r1', role: 'edge', max: 4, limit: 10 }], timing: { nodeTimeout: '10m' } }),
    ],
    config: { metrics: { nodeSeries: 2 } },
  });
  t.teardown(() => svc.close());
  for (const [i, n] of nodes.entries()) await new FakeNode(svc, 'g', n.id).beat({ subscribers: i });
  const text = (await svc.get('/as/v1/metrics', null)).text;
  t.regex(text, /^switchyard_node_load/m, 'open on a loopback bind by default');
  const withSeries = [...text.matchAll(/^switchyard_node_load\{[^}]*node="([^"]+)"\}/gm)].map((m) => m[1]).sort();
  t.deepEqual(withSeries, ['e3', 'e4'], 'the two busiest');
  t.regex(text, /^switchyard_node_series_omitted\{group="g"\} 2$/m);
  t.regex(text, /^switchyard_group_connections\{group="g",role="edge"\} 6$/m, 'group totals count every node');
  t.regex(text, /^switchyard_group_capacity\{group="g",role="edge"\} 40$/m);
});

test('SWITCHYARD_METRICS_TOKEN must be a long secret, and Terraform may never be handed it', (t) => {
  t.throws(() => parseConfig({ geoip: { enabled: false } }, 'test', { SWITCHYARD_METRICS_TOKEN: 'short' }), {
    message: /SWITCHYARD_METRICS_TOKEN = \(hidden\): must be 32 to 4096 characters without spaces/,
  });
  t.is(parseConfig({ geoip: { enabled: false } }, 'test', { SWITCHYARD_METRICS_TOKEN: SCRAPER_SECRET }).server.metricsToken, SCRAPER_SECRET);
  t.throws(() => parseConfig({ terraform: { env: ['SWITCHYARD_METRICS_TOKEN'] } }, 'test'), { message: /terraform\.env\[0\] = "SWITCHYARD_METRICS_TOKEN": is one of the control plane's secrets/ });
});
