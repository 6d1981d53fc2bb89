// A Terraform node group in cluster mode (docs/cluster.md, "Terraform state"), with the real CLI and
// the shipped `local` module on a real 3-server NATS cluster and 3 instances: its nodes come into
// service; the owner is killed (-9); the next owner's Terraform works on the same state, through its
// own http backend: nothing is made twice, a lock the dead owner left is broken (and said so), a
// scale-out adds one node beside the inherited ones, and the group's deletion destroys them all.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { EventRecord } from '../../src/domain/events.js';
import { findProgram } from '../../src/os/programs.js';
import { Cluster, clusterConfig } from '../helpers/cluster.js';
import { inService, waitForEvents } from '../helpers/events.js';
import { staticGroup, tempDir } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';

import { killAgentsOf } from '../helpers/service.js';
import { nodesInTfState, putTfLock, readTfLock, readTfState } from '../helpers/tfstate-reader.js';
import { until } from '../helpers/until.js';

const binary = process.env.SWITCHYARD_TERRAFORM_BIN ?? findProgram('terraform') ?? findProgram('tofu');
const real = binary ? test : test.skip;

const tfGroup = (min: number) => ({
  ...staticGroup({ name: 'tf', regions: ['r1'], rules: [{ region: 'r1', role: 'origin', min, max: 4, limit: 10 }], timing: { heartbeatMs: 300, nodeTimeout: '20s' } }),
  platform: { type: 'terraform', terraform: { module: 'local', retries: 2, retryBackoff: '500ms', batchWindow: 50 } },
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

real(`a Terraform group's state follows its owner: kill -9, the next owner inherits it, breaks the dead owner's lock, scales out and destroys (${binary ?? 'no CLI'})`, async (t) => {
  // Every instance runs on this machine: the local module's node directories are one place for all
  // (pinned by the operator), as a cloud module's resources are one place for all.
  const nodesDir = tempDir('switchyard-tf-nodes-');
  t.teardown(() => {
    killAgentsOf(nodesDir);
    rmSync(nodesDir, { recursive: true, force: true });
  });
  const config = { ...clusterConfig([], '2s'), terraform: { modules: { local: { variables: { state_dir: nodesDir } } } } };
  const c = await Cluster.start(t, config, { env: { SWITCHYARD_TERRAFORM_BIN: binary! } });
  await c.ready();
  const nats = c.nats.urls();
  const token = await c.login(c.instances[0]!);
  const auth = { authorization: `Bearer ${token}` };
  const startedAt = Date.now();

  const created = await request(c.instances[1]!.url, 'POST', '/as/v1/nodegroups', tfGroup(2), auth);
  t.is(created.status, 201, created.text);
  const tfEvents = (s: readonly EventRecord[]) => s.filter((e) => e.group === 'tf');
  let seen = await waitForEvents(c.instances[0]!.url, token, (s) => inService(tfEvents(s)).size === 2, { timeoutMs: 60_000 });
  const first = [...inService(tfEvents(seen))].sort();
  t.log(`2 nodes in service ${Date.now() - startedAt} ms after the create`);
  t.deepEqual(nodesInTfState(await readTfState(nats, 'tf')), first, 'the state in JetStream names both nodes');
  const pids = first.map((id) => Number(readFileSync(join(nodesDir, 'tf', id, 'agent.pid'), 'utf8')));
  const acquired = seen.filter((e): e is Extract<EventRecord, { type: 'cluster.owner' }> => e.type === 'cluster.owner' && e.group === 'tf').at(-1)!;
  const owner = c.byId(acquired.owner);
  const workDir = join(owner.dataDir, 'terraform', 'tf');
  t.false(existsSync(join(workDir, 'terraform.tfstate')), 'no state in the working directory');
  t.regex(readFileSync(join(workDir, '.terraform', 'terraform.tfstate'), 'utf8'), /"type": "http"/, 'initialised with the http backend');
  const environ = readFileSync(`/proc/${pids[0]}/environ`, 'utf8');
  t.false(environ.includes('TF_HTTP_PASSWORD'), "a node agent gets none of the backend's credentials");

  // The backend, through real HTTP: nothing for anyone without this instance's credentials.
  const statePath = '/as/v1/internal/terraform/tf/state';
  t.is((await request(owner.url, 'GET', statePath)).status, 401);
  const guess = { authorization: `Basic ${Buffer.from('switchyard-terraform:guess').toString('base64')}` };
  t.is((await request(owner.url, 'GET', statePath, undefined, guess)).status, 401);
  t.is((await request(owner.url, 'POST', `${statePath}?ID=x`, { version: 4, resources: [] }, guess)).status, 401);
  t.is((await request(owner.url, 'LOCK', '/as/v1/internal/terraform/tf/lock', { ID: 'x' }, guess)).status, 401);
  t.false((await request(owner.url, 'GET', '/as/v1/openapi.json')).text.includes('/internal/'), 'not in the API document');

  // kill -9 of the owner, between applies.
  const lastSeq = seen.at(-1)!.seq;
  await c.kill(owner, 'SIGKILL');
  const survivor = c.running()[0]!;
  seen = await waitForEvents(survivor.url, token, (s) => s.some((e) => e.type === 'cluster.owner' && e.group === 'tf' && e.owner !== owner.id), { since: lastSeq, timeoutMs: 30_000 });
  const next = seen.find((e): e is Extract<EventRecord, { type: 'cluster.owner' }> => e.type === 'cluster.owner' && e.group === 'tf' && e.owner !== owner.id)!;
  t.log(`${next.owner} took the group at epoch ${next.epoch} (was ${owner.id} at ${acquired.epoch})`);
  // As if the dead owner had been in the middle of an apply: its lock is still there.
  await putTfLock(nats, 'tf', { id: 'dead-owner-apply', instance: owner.id, epoch: acquired.epoch });

  // The next owner scales out: one more node, against the inherited state.
  const scaled = await request(survivor.url, 'PUT', '/as/v1/nodegroups/tf', tfGroup(3), auth);
  t.is(scaled.status, 200, scaled.text);
  seen = await waitForEvents(survivor.url, token, (s) => inService(tfEvents(s)).size === 3, { timeoutMs: 60_000 });
  const after = [...inService(tfEvents(seen))].sort();
  t.true(
    first.every((id) => after.includes(id)),
    'the inherited nodes are still in service',
  );
  const sinceKill = seen.filter((e) => e.seq > lastSeq && e.group === 'tf');
  t.deepEqual(
    sinceKill.filter((e) => e.type === 'node.state' && first.includes(e.nodeId) && e.to !== 'INSERVICE').map((e) => (e as { nodeId: string }).nodeId),
    [],
    'no inherited node faulted or was replaced',
  );
  const creations = sinceKill.filter((e) => e.type === 'scaling.action' && e.action === 'create').reduce((n, e) => n + (e as { count: number }).count, 0);
  t.is(creations, 1, 'the new owner made one node: the scale-out, nothing twice');
  t.true(
    sinceKill.some((e) => e.type === 'platform.progress' && e.phase === 'lock-broken' && (e.message ?? '').includes(owner.id)),
    "the dead owner's lock was broken, and said so",
  );
  t.deepEqual(nodesInTfState(await readTfState(nats, 'tf')), after, 'the state names the three nodes, once each');
  t.true(
    pids.every((pid) => alive(pid)),
    'the inherited agents are the same processes (not replaced)',
  );
  t.is(await readTfLock(nats, 'tf'), null, 'unlocked after the apply');

  // Deleted through another instance: every node destroyed through the inherited state.
  t.is((await request(c.running().at(-1)!.url, 'DELETE', '/as/v1/nodegroups/tf', undefined, auth)).status, 202);
  await waitForEvents(survivor.url, token, (s) => s.some((e) => e.type === 'nodegroup.changed' && e.group === 'tf' && (e as { change: string }).change === 'deleted'), {
    since: seen.at(-1)!.seq,
    timeoutMs: 60_000,
  });
  // The destroy provisioner signalled them; they exit on their own time.
  await until(() => pids.every((pid) => !alive(pid)), 10_000, "the inherited nodes' agents gone");
  t.is(await readTfState(nats, 'tf'), null, 'the state went with the group');
  t.log(`whole scenario: ${Date.now() - startedAt} ms`);
});
