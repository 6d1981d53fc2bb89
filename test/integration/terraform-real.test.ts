// The real Terraform (or OpenTofu) CLI, where this machine has one: the shipped `local` module
// starts node agents with terraform_data and local-exec, so the whole path runs without a cloud.
// The fake CLI (test/fake-terraform) covers the failure scenarios; this proves the real protocol.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { findProgram } from '../../src/os/programs.js';
import type { EventRecord } from '../../src/domain/events.js';
import { waitForEvents } from '../helpers/events.js';
import { body } from '../helpers/http.js';
import { staticGroup, startTestService } from '../helpers/service.js';

const binary = process.env.SWITCHYARD_TERRAFORM_BIN ?? findProgram('terraform') ?? findProgram('tofu');
const real = binary ? test : test.skip;

// In the service's environment and not listed for Terraform (terraform.env): no node may see it.
process.env.SWITCHYARD_TEST_UNLISTED = "the service's own";

real(`the real CLI (${binary ?? 'none on PATH'}) makes a node that comes into service, and deleting the group destroys it`, async (t) => {
  const svc = await startTestService({ groups: [], env: { SWITCHYARD_TERRAFORM_BIN: binary! } });
  t.teardown(() => svc.close());
  // A declared string full of shell text: it reaches the node as data, unchanged, and runs nothing.
  const marker = join(svc.dataDir, 'pwned');
  const scope = `live'; touch ${marker}; echo "$(touch ${marker})" \`touch ${marker}\` \${HOME} %{ if true }\n\\x`;
  const group = {
    ...staticGroup({ name: 'real', regions: ['r1'], rules: [{ region: 'r1', role: 'origin', min: 1, max: 2, limit: 10 }] }),
    platform: { type: 'terraform', terraform: { module: 'local', retries: 1, retryBackoff: '1s', batchWindow: 50, variables: { scope } } },
  };
  t.is((await svc.send('POST', '/as/v1/nodegroups', group)).status, 201);
  const inService = (s: readonly EventRecord[]) => s.find((e) => e.type === 'node.state' && e.group === 'real' && (e as { to?: string }).to === 'INSERVICE') as { nodeId: string } | undefined;
  // init downloads nothing (terraform_data is built in); the agent must start and heartbeat.
  let seen = await waitForEvents(svc.url, svc.adminToken, (s) => inService(s) !== undefined, { timeoutMs: 60_000 });
  const nodeId = inService(seen)!.nodeId;
  t.true(
    seen.some((e) => e.type === 'platform.progress' && (e as { phase?: string }).phase === 'complete' && (e as { nodeId?: string }).nodeId === nodeId),
    'progress parsed from apply -json',
  );
  const origin = body<{ nodeId: string; serverAddress: string }>(await svc.get('/as/v1/streams/live/cam/publish?nodeGroup=real'));
  t.is(origin.nodeId, nodeId);
  t.regex(origin.serverAddress, /^127\.(6[4-9]|[7-9][0-9]|1[01][0-9]|12[0-7])\./, 'the address from output -json');

  const pid = Number(readFileSync(join(svc.dataDir, 'terraform-nodes', 'real', nodeId, 'agent.pid'), 'utf8'));
  const environ = new Map(
    readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  t.is(environ.get('SWITCHYARD_NODE_SCOPE'), scope, 'the node got the value as it was given');
  t.false(existsSync(marker), 'and nothing in it ran');
  t.false(environ.has('SWITCHYARD_TEST_UNLISTED'), "Terraform, and what it starts, sees the operator's listing of the environment, not the service's");
  t.false(environ.has('SWITCHYARD_JWT_SECRET'));

  t.is((await svc.send('DELETE', '/as/v1/nodegroups/real', undefined)).status, 202);
  seen = await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'nodegroup.changed' && e.group === 'real' && (e as { change?: string }).change === 'deleted'), {
    timeoutMs: 60_000,
    since: seen.at(-1)!.seq,
  });
  t.true(
    seen.some((e) => e.type === 'node.state' && (e as { nodeId?: string }).nodeId === nodeId && (e as { to?: string | null }).to === null),
    'the node was destroyed through an apply',
  );
});
