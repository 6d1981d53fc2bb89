// The Terraform runner against the fake CLI (test/fake-terraform): real processes, real files,
// the documented protocol. The real binary drops in by name; nothing here is special to the fake.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { parseConfig } from '../../src/config/load.js';
import type { NodeGroup } from '../../src/config/types.js';
import { loadTerraformModules } from '../../src/platforms/terraform/modules.js';
import type { TerraformModules } from '../../src/policy/terraform/requests.js';
import { TerraformRunner, type RunnerProgress } from '../../src/platforms/terraform/runner.js';
import { pinnedInputs, TerraformPlatform } from '../../src/platforms/terraform/platform.js';
import { projectPath } from '../../src/paths.js';
import { ManualTimers } from '../helpers/manual-timers.js';
import { staticGroup, tempDir } from '../helpers/service.js';

const FAKE_TERRAFORM = projectPath('test', 'fake-terraform', 'terraform');

let modules: TerraformModules;
test.before(async () => {
  modules = (await loadTerraformModules({ binary: FAKE_TERRAFORM, env: [], providerSettings: ['region'], modules: {} })).catalog;
});

function setup(t: { teardown(fn: () => void): void }, terraform: object = {}) {
  const dir = tempDir('switchyard-tf-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const scenarioFile = join(dir, 'scenario.json');
  writeFileSync(scenarioFile, '{}');
  const group: NodeGroup = parseConfig(
    { nodeGroups: [{ ...staticGroup({ regions: ['r1', 'r2'] }), platform: { type: 'terraform', terraform: { module: 'local', retries: 0, retryBackoff: 50, batchWindow: 50, ...terraform } } }] },
    'test',
  ).nodeGroups[0]!;
  const progress: RunnerProgress[] = [];
  const watchers: Array<{ when: (p: RunnerProgress) => boolean; then: () => void }> = [];
  /** Resolves at the first progress event that matches. */
  const on = (when: (p: RunnerProgress) => boolean) => new Promise<void>((then) => watchers.push({ when, then }));
  const timers = new ManualTimers();
  let tokens = 0;
  const make = () =>
    new TerraformRunner({
      dir: join(dir, 'work'),
      group,
      modules,
      pinned: (m) => pinnedInputs(m, dir),
      binary: FAKE_TERRAFORM,
      passEnv: ['FAKE_TERRAFORM_SCENARIO', 'AWS_ACCESS_KEY_ID'],
      serviceUrl: 'http://127.0.0.1:5080',
      nodeToken: (id) => `token-${id}-${++tokens}`,
      onProgress: (p) => {
        progress.push(p);
        for (const w of watchers.splice(0)) (w.when(p) ? w.then : () => watchers.push(w))();
      },
      // The service's environment, as it would hold the control plane's secrets and whatever else:
      // Terraform gets only what the operator listed (and PATH, HOME, TMPDIR, TF_CLI_CONFIG_FILE).
      env: {
        PATH: process.env.PATH,
        HOME: '/home/switchyard',
        FAKE_TERRAFORM_SCENARIO: scenarioFile,
        AWS_ACCESS_KEY_ID: 'AKIA-listed',
        AWS_SECRET_ACCESS_KEY: 'not-listed',
        NODE_OPTIONS: '--require /tmp/evil.js',
        SWITCHYARD_JWT_SECRET: 'x'.repeat(32),
        SWITCHYARD_JWT_PRIVATE_KEY: 'pem',
        SWITCHYARD_ADMIN_PASSWORD: 'y'.repeat(12),
      },
      timers,
    });
  const runs = () =>
    readFileSync(join(dir, 'work', 'fake-terraform.log'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { args: string[]; result: string; env: string[]; created?: string[]; destroyed?: string[] });
  const log = () => runs().filter((e) => e.args[0] === 'apply');
  const scenario = (s: object) => writeFileSync(scenarioFile, JSON.stringify(s));
  return { dir, group, progress, make, log, runs, scenario, on, timers };
}

test('creates and destroys nodes; concurrent requests share one apply', async (t) => {
  const { make, log, runs, progress, dir } = setup(t);
  const runner = make();
  const [a, b] = await Promise.all([runner.ensure({ id: 'a', role: 'origin', region: 'r1' }), runner.ensure({ id: 'b', role: 'edge', region: 'r2' })]);
  t.regex(a.public ?? '', /^198\.51\.100\.\d+$/);
  t.truthy(b.private);
  t.is(log().length, 1, 'one apply for both');
  // PWD is the fake's own shell wrapper's.
  for (const run of runs()) {
    t.deepEqual(
      run.env,
      ['AWS_ACCESS_KEY_ID', 'CHECKPOINT_DISABLE', 'FAKE_TERRAFORM_SCENARIO', 'HOME', 'PATH', 'PWD', 'TF_INPUT', 'TF_IN_AUTOMATION'],
      'Terraform (and what its local-exec starts) sees the listed environment only: no secrets, nothing unlisted',
    );
  }
  t.deepEqual(log()[0]!.created, ['a', 'b']);
  const vars = JSON.parse(readFileSync(join(dir, 'work', 'terraform.tfvars.json'), 'utf8')) as { nodes: Record<string, unknown>; tokens: Record<string, string> };
  t.deepEqual(vars.nodes, { a: { role: 'origin', region: 'r1' }, b: { role: 'edge', region: 'r2' } });
  t.regex(vars.tokens.a!, /^token-a-/);
  const main = JSON.parse(readFileSync(join(dir, 'work', 'main.tf.json'), 'utf8')) as { module: Record<string, { source: string }> };
  t.is(main.module.nodes_r1!.source, './modules/local');
  await runner.remove('a');
  t.deepEqual(log()[1]!.destroyed, ['a']);
  t.deepEqual([...(await runner.state())], ['b']);
  t.true(progress.some((p) => 'nodeId' in p && p.nodeId === 'a' && p.phase === 'complete'));
});

test('a group the API would refuse is not run, however it got here (an older version stored it, say)', async (t) => {
  const { make, dir } = setup(t, { variables: { node_binary: "x'; touch /tmp/pwned; '", nope: 1 } });
  const err = await t.throwsAsync(make().ensure({ id: 'a', role: 'origin', region: 'r1' }));
  t.regex(err!.message, /refused to run: platform\.terraform\.variables\.node_binary is a path or program .*; platform\.terraform\.variables\.nope is not a variable of module 'local'/);
  t.false(existsSync(join(dir, 'work', 'fake-terraform.log')), 'no Terraform process started');
  t.false(existsSync(join(dir, 'work', 'main.tf.json')), 'nothing written');
});

test('requests during an apply are batched into the next one', async (t) => {
  const { make, log, scenario, on } = setup(t);
  scenario({ delayMs: 400 });
  const runner = make();
  const started = on((p) => p.operation === 'apply' && 'nodeId' in p && p.nodeId === 'a' && p.phase === 'start');
  const first = runner.ensure({ id: 'a', role: 'origin', region: 'r1' });
  await started;
  const later = [runner.ensure({ id: 'b', role: 'edge', region: 'r1' }), runner.ensure({ id: 'c', role: 'edge', region: 'r1' }), runner.ensure({ id: 'd', role: 'edge', region: 'r2' })];
  await Promise.all([first, ...later]);
  t.deepEqual(
    log().map((e) => e.created),
    [['a'], ['b', 'c', 'd']],
  );
});

test('a failed apply is retried with backoff until it succeeds', async (t) => {
  const { make, log, scenario, progress } = setup(t, { retries: 2 });
  scenario({ failApplies: 1 });
  const a = await make().ensure({ id: 'a', role: 'origin', region: 'r1' });
  t.truthy(a.public);
  t.deepEqual(
    log().map((e) => e.result),
    ['early failure', 'ok'],
  );
  const retry = progress.find((p) => p.phase === 'retry') as { message: string; inMs: number };
  t.regex(retry.message, /Failed to query available provider packages/);
  t.is(retry.inMs, 50);
});

test('a partial failure settles the nodes that were made and fails the others with their diagnostic', async (t) => {
  const { make, scenario } = setup(t);
  scenario({ failNodes: ['b'] });
  const runner = make();
  const [a, b] = await Promise.allSettled([runner.ensure({ id: 'a', role: 'origin', region: 'r1' }), runner.ensure({ id: 'b', role: 'origin', region: 'r1' })]);
  t.is(a.status, 'fulfilled');
  t.is(b.status, 'rejected');
  t.regex((b as PromiseRejectedResult).reason.message, /InsufficientInstanceCapacity: There is no capacity/);
  t.deepEqual([...(await runner.state())], ['a']);
});

test('an early failure without JSON fails with its text', async (t) => {
  const { make, scenario } = setup(t);
  scenario({ failApplies: 5 });
  const err = await t.throwsAsync(make().ensure({ id: 'a', role: 'origin', region: 'r1' }));
  t.regex(err!.message, /Failed to query available provider packages.*after 1 attempts/);
});

test('an apply past its timeout is interrupted once and waited for', async (t) => {
  const { make, log, scenario, progress, on, timers } = setup(t, { applyTimeout: 2000 });
  scenario({ hang: true });
  const hanging = on((p) => p.operation === 'apply' && 'nodeId' in p && p.nodeId === 'a' && p.phase === 'start');
  const created = make().ensure({ id: 'a', role: 'origin', region: 'r1' });
  // The apply has started its resource and hangs: now its timeout comes.
  await hanging;
  const timer = await timers.next('apply');
  t.is(timer.ms, 2000, 'armed with applyTimeout');
  timer.fire();
  const err = await t.throwsAsync(created);
  t.regex(err!.message, /took longer than 2000 ms and was interrupted/);
  t.deepEqual(
    log().map((e) => e.result),
    ['hanging', 'interrupted'],
    'Terraform stopped cleanly on the interrupt',
  );
  t.true(progress.some((p) => p.phase === 'diagnostic' && /execution halted/.test(p.diagnostic.summary)));
  t.is(timers.armed.filter((x) => x.what === 'apply').length, 1, 'interrupted once');
});

test('init, show and output that hang are interrupted at their timeouts, so supervision goes on', async (t) => {
  const { make, scenario, timers } = setup(t, { applyTimeout: 1500, commandTimeout: 500 });
  scenario({ hangCommands: ['show', 'output'] });
  const runner = make();
  const state = runner.state();
  const showTimer = await timers.next('show');
  t.is(showTimer.ms, 500, 'show has commandTimeout');
  showTimer.fire();
  const show = await t.throwsAsync(state);
  t.regex(show!.message, /terraform show failed: took longer than 500 ms and was interrupted/);
  const initTimer = timers.armed.find((x) => x.what === 'init')!;
  t.is(initTimer.ms, 1500, 'init has applyTimeout (it downloads)');
  t.true(initTimer.cancelled, 'init finished without its timeout');
  const outputs = runner.outputs();
  (await timers.next('output')).fire();
  const output = await t.throwsAsync(outputs);
  t.regex(output!.message, /terraform output failed: took longer than 500 ms/);

  const fresh = setup(t, { applyTimeout: 500 });
  fresh.scenario({ hangCommands: ['init'] });
  const started = fresh.make().state();
  (await fresh.timers.next('init')).fire();
  const init = await t.throwsAsync(started);
  t.regex(init!.message, /terraform init failed: took longer than 500 ms and was interrupted/);
});

test('after a restart: known nodes in the state are adopted with their tokens, missing ones reported, orphans found', async (t) => {
  const { make, log, group, dir } = setup(t);
  const before = make();
  await Promise.all(['a', 'b'].map((id) => before.ensure({ id, role: 'origin', region: 'r1' })));
  const tokenOfA = (JSON.parse(readFileSync(join(dir, 'work', 'terraform.tfvars.json'), 'utf8')) as { tokens: Record<string, string> }).tokens.a;

  const platform = new TerraformPlatform({
    dataDir: join(dir, 'unused'),
    group,
    serviceUrl: 'http://x',
    operator: { binary: FAKE_TERRAFORM, env: [] },
    modules,
    nodeToken: () => 'new',
    onProgress: () => {},
  });
  Object.assign(platform, { runner: make() });
  const known = [
    { id: 'a', role: 'origin' as const, region: 'r1', platform: { type: 'terraform' as const } },
    { id: 'c', role: 'origin' as const, region: 'r1', platform: { type: 'terraform' as const } },
  ];
  const result = await platform.reconcile(group, known);
  t.like(result, { missing: ['c'], orphans: ['b'], listed: [], retired: [] });
  await platform.runner.remove('b');
  t.deepEqual(log().at(-1)!.destroyed, ['b']);
  const vars = JSON.parse(readFileSync(join(dir, 'work', 'terraform.tfvars.json'), 'utf8')) as { nodes: Record<string, unknown>; tokens: Record<string, string> };
  t.deepEqual(Object.keys(vars.nodes), ['a']);
  t.is(vars.tokens.a, tokenOfA, 'the adopted node keeps its token, so its resources are not changed');
});
