// The terraform platform through the whole service, with the fake CLI standing in for the binary.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { EventRecord } from '../../src/domain/events.js';
import { projectPath } from '../../src/paths.js';
import { isProblem } from '../helpers/assert.js';
import { FakeNode } from '../helpers/fake-node.js';
import { waitForEvents } from '../helpers/events.js';
import { body } from '../helpers/http.js';
import { staticGroup, startTestService, tempDir } from '../helpers/service.js';

const FAKE_TERRAFORM = projectPath('test', 'fake-terraform', 'terraform');
const scenarioFile = join(tempDir('switchyard-tf-scenario-'), 'scenario.json');
process.env.FAKE_TERRAFORM_SCENARIO = scenarioFile;
const scenario = (s: object) => writeFileSync(scenarioFile, JSON.stringify(s));

const tfGroup = (name: string, min = 2, timing: object = {}) => ({
  ...staticGroup({ name, regions: ['r1'], rules: [{ region: 'r1', role: 'origin', min, max: 4, limit: 10 }], timing: { faultThreshold: 1, ...timing } }),
  platform: { type: 'terraform', terraform: { module: 'local', retries: 0, batchWindow: 50 } },
});
/** The operator's settings: the CLI (here the fake) and what of the environment it may see. */
const operator = { terraform: { binary: FAKE_TERRAFORM, env: ['FAKE_TERRAFORM_SCENARIO'] } };

const created = (seen: readonly EventRecord[], group: string) => seen.filter((e) => e.type === 'node.state' && e.group === group && e.to === 'CREATED').map((e) => (e as { nodeId: string }).nodeId);

test.serial('nodes come from applies, with their addresses; restart reconciles; deletion destroys them', async (t) => {
  scenario({});
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  let svc = await startTestService({ dataDir, groups: [tfGroup('tf')], config: { ...operator, server: { host: '127.0.0.1', port: 0, publicUrl: 'https://cp.example.test' } } });
  let seen = await waitForEvents(svc.url, svc.adminToken, (s) => created(s, 'tf').length === 2);
  const vars = JSON.parse(readFileSync(join(dataDir, 'terraform', 'tf', 'terraform.tfvars.json'), 'utf8')) as { service_url: string };
  t.is(vars.service_url, 'https://cp.example.test', 'cloud nodes are told the public URL, not the listening address');
  const ids = created(seen, 'tf');
  t.true(seen.some((e) => e.type === 'platform.progress' && e.operation === 'apply' && e.phase === 'complete' && ids.includes(e.nodeId ?? '')));
  for (const id of ids) await new FakeNode(svc, 'tf', id).beat();
  const origin = body<{ serverAddress: string; nodeId: string }>(await svc.get('/as/v1/streams/live/cam/publish?nodeGroup=tf'));
  t.regex(origin.serverAddress, /^198\.51\.100\.\d+$/, 'the address from `terraform output`');
  // A region whose nodes still run cannot go: their resources need its module and provider to be destroyed.
  const moved = { ...tfGroup('tf'), ...staticGroup({ name: 'tf', regions: ['r2'], rules: [{ region: 'r2', role: 'origin', min: 2, max: 4, limit: 10 }], timing: { faultThreshold: 1 } }) };
  const refused = await svc.send('PUT', '/as/v1/nodegroups/tf', { ...moved, platform: tfGroup('tf').platform });
  isProblem(t, refused, 409, 'NODE_GROUP_CONFLICT');
  t.regex(body<{ detail: string }>(refused).detail, /still has nodes in 'r1' \(2 nodes\)/);
  await svc.close({ stopNodes: false });

  // While the service is down, an orphan appears in the state (say, a create that finished late).
  const work = join(dataDir, 'terraform', 'tf');
  const state = JSON.parse(readFileSync(join(work, 'terraform.tfstate'), 'utf8')) as { nodes: Record<string, unknown> };
  state.nodes.orphan = { region: 'r1', role: 'origin', public: '198.51.100.250', private: '10.0.0.250' };
  writeFileSync(join(work, 'terraform.tfstate'), JSON.stringify(state));

  svc = await startTestService({ dataDir, groups: [tfGroup('tf')], config: operator });
  t.teardown(() => svc.close());
  for (const id of ids) await new FakeNode(svc, 'tf', id).beat();
  seen = await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'platform.progress' && e.nodeId === 'orphan' && e.phase === 'complete'));
  // The state, not the CLI's own log: the log line is written after the last message the service reads.
  const after = JSON.parse(readFileSync(join(work, 'terraform.tfstate'), 'utf8')) as { nodes: Record<string, unknown> };
  t.deepEqual(Object.keys(after.nodes).sort(), [...ids].sort(), 'the orphan was destroyed and the known nodes kept');
  t.false(
    seen.some((e) => e.type === 'node.state' && ids.includes((e as { nodeId: string }).nodeId) && e.to === 'FAULT'),
    'the known nodes were adopted, not faulted',
  );

  t.is((await svc.send('DELETE', '/as/v1/nodegroups/tf', undefined)).status, 202);
  for (const id of ids) await new FakeNode(svc, 'tf', id).beat();
  await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'nodegroup.changed' && e.group === 'tf' && e.change === 'deleted'));
  t.deepEqual(JSON.parse(readFileSync(join(work, 'terraform.tfstate'), 'utf8')).nodes, {});
});

test.serial('failed creates fault their nodes, and faultThreshold stops runaway creation', async (t) => {
  scenario({ failApplies: 1000 });
  const svc = await startTestService({ groups: [tfGroup('bad', 3)], config: operator });
  t.teardown(() => svc.close());
  const seen = await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'scaling.blocked' && e.group === 'bad'));
  const faults = seen.filter((e) => e.type === 'node.state' && e.to === 'FAULT') as Array<{ reason?: string }>;
  t.true(faults.length >= 2);
  t.regex(faults[0]!.reason ?? '', /create failed: .*Failed to query available provider packages/);
  t.true(seen.some((e) => e.type === 'platform.error' && e.operation === 'create'));
  t.like(
    seen.find((e) => e.type === 'scaling.blocked'),
    { role: 'origin', region: 'r1' },
  );
});

test.serial('an apply that fails early, hangs until interrupted or half-succeeds is retried until the group is whole, and events say so', async (t) => {
  scenario({ failApplies: 1 });
  const group = (min: number) => ({
    ...tfGroup('flaky', min, { faultThreshold: 3 }),
    platform: { type: 'terraform', terraform: { module: 'local', retries: 3, retryBackoff: '100ms', batchWindow: 50 } },
  });
  const svc = await startTestService({ groups: [group(1)], config: operator });
  t.teardown(() => svc.close());
  const retried = (s: readonly EventRecord[], pattern: RegExp) =>
    s.some((e) => e.type === 'platform.progress' && e.group === 'flaky' && e.phase === 'retry' && pattern.test((e as { message?: string }).message ?? ''));

  // An early failure (no JSON at all), then success on the retry.
  let seen = await waitForEvents(svc.url, svc.adminToken, (s) => created(s, 'flaky').length === 1);
  t.true(retried(seen, /Failed to query available provider packages/));

  // A hung apply, interrupted as its timeout would (terraform-runner.test.ts fires that timeout;
  // here the test sends the interrupt once the apply is seen hanging), then the retry goes through.
  scenario({ hangApplies: 1 });
  t.is((await svc.send('PUT', '/as/v1/nodegroups/flaky', group(2))).status, 200);
  seen = await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'platform.progress' && e.group === 'flaky' && e.phase === 'start'), { since: seen.at(-1)!.seq });
  const hanging = readFileSync(join(svc.dataDir, 'terraform', 'flaky', 'fake-terraform.log'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { result: string; pid?: number })
    .find((e) => e.result === 'hanging');
  process.kill(hanging!.pid!, 'SIGINT');
  seen = await waitForEvents(svc.url, svc.adminToken, (s) => retried(s, /execution halted/), { since: seen.at(-1)!.seq });
  seen = await waitForEvents(svc.url, svc.adminToken, (s) => created(s, 'flaky').length === 1, { since: seen.at(-1)!.seq });

  // Half a success: of two new nodes one is made and settled at once, the other is retried.
  scenario({ failResources: 1 });
  t.is((await svc.send('PUT', '/as/v1/nodegroups/flaky', group(4))).status, 200);
  seen = await waitForEvents(svc.url, svc.adminToken, (s) => created(s, 'flaky').length === 2, { since: seen.at(-1)!.seq });
  t.true(retried(seen, /./));
  const failed = seen.find((e) => e.type === 'platform.progress' && e.phase === 'errored') as { nodeId?: string } | undefined;
  t.truthy(failed?.nodeId, 'the failed resource is reported');
  t.true(
    seen.some((e) => e.type === 'platform.progress' && e.phase === 'diagnostic' && e.nodeId === failed!.nodeId && /InsufficientInstanceCapacity/.test((e as { message?: string }).message ?? '')),
    'with its diagnostic',
  );
  t.true(created(seen, 'flaky').includes(failed!.nodeId!), 'and made on the retry');

  const last = seen.at(-1)!.seq;
  const all = await waitForEvents(svc.url, svc.adminToken, (s) => s.at(-1)!.seq >= last);
  t.false(
    all.some((e) => e.type === 'node.state' && e.group === 'flaky' && e.to === 'FAULT'),
    'no node was given up on',
  );
  const detail = body<{ scaling: Array<{ pending: number; fault: number }> }>(await svc.get('/as/v1/nodegroups/flaky'));
  t.like(detail.scaling[0], { pending: 4, fault: 0 });
});

test.serial('a group actor that crashes while its node is being created: the node still arrives, changes meanwhile are refused or carried out, the supervisor goes on', async (t) => {
  // The apply holds its resource until the test releases it, after the crash.
  const release = join(tempDir('switchyard-tf-release-'), 'release');
  scenario({ holdUntil: release });
  const svc = await startTestService({ groups: [tfGroup('slow', 1)], config: operator });
  t.teardown(() => svc.close());
  let seen = await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'node.state' && e.group === 'slow' && e.to === 'CREATING'));
  const id = (seen.find((e) => e.type === 'node.state' && e.to === 'CREATING') as { nodeId: string }).nodeId;

  let restart!: () => void;
  await svc.service.actors.group('slow')!.crash(new Promise<void>((resolve) => (restart = resolve)));
  // A replacement spec while the thread is down is refused whole, not half applied.
  isProblem(t, await svc.send('PUT', '/as/v1/nodegroups/slow', tfGroup('slow', 3)), 503, 'NOT_READY');
  restart();
  writeFileSync(release, '');

  // The apply finishes after the restart: its result reaches the new thread, not the dead one.
  seen = await waitForEvents(svc.url, svc.adminToken, (s) => created(s, 'slow').includes(id));
  t.true(seen.some((e) => e.type === 'actor.restarted' && e.group === 'slow'));
  t.false(
    seen.some((e) => e.type === 'platform.error' && e.group === 'slow'),
    'nothing was lost or reported failed',
  );
  t.is(body<{ scaling: Array<{ min: number }> }>(await svc.get('/as/v1/nodegroups/slow')).scaling[0]!.min, 1, 'the refused spec changed nothing');
  await new FakeNode(svc, 'slow', id).beat();
  t.is(body<{ nodeId: string }>(await svc.get('/as/v1/streams/live/cam/publish?nodeGroup=slow')).nodeId, id);

  // Deleted while its thread is down: the thread that follows retires it.
  let restartAgain!: () => void;
  await svc.service.actors.group('slow')!.crash(new Promise<void>((resolve) => (restartAgain = resolve)));
  t.is((await svc.send('DELETE', '/as/v1/nodegroups/slow', undefined)).status, 202);
  restartAgain();
  const beating = setInterval(() => void new FakeNode(svc, 'slow', id).beat().catch(() => {}), 200);
  t.teardown(() => clearInterval(beating));
  await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'nodegroup.changed' && e.group === 'slow' && e.change === 'deleted'), { since: seen.at(-1)!.seq });
  clearInterval(beating);
  t.is((await svc.get('/as/v1/nodegroups/slow')).status, 404);
});
