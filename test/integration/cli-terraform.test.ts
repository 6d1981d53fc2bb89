// The CLI's waits follow Terraform: `nodegroups create` of a group on the shipped `local` module
// shows the apply's progress (platform.progress) and its node coming INSERVICE before it returns,
// and `nodegroups delete` shows the destroying apply. With the real Terraform CLI (on PATH).
import { rmSync } from 'node:fs';
import test from 'ava';
import { findProgram } from '../../src/os/programs.js';
import { ADMIN_PASSWORD, staticGroup, startTestService, tempDir } from '../helpers/service.js';
import { cli } from '../helpers/cli.js';

const binary = process.env.SWITCHYARD_TERRAFORM_BIN ?? findProgram('terraform') ?? findProgram('tofu');

test('nodegroups create and delete of a Terraform group show the applies as they happen', async (t) => {
  if (!binary) throw new Error('terraform (or tofu) is not installed');
  const svc = await startTestService({ groups: [], env: { SWITCHYARD_TERRAFORM_BIN: binary } });
  t.teardown(() => svc.close());
  const home = tempDir('switchyard-cli-tf-');
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  t.is((await cli(home, ['login', '--url', svc.url, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` })).code, 0);
  const group = {
    ...staticGroup({ name: 'tf', regions: ['r1'], rules: [{ region: 'r1', role: 'origin', min: 1, max: 1, limit: 10 }] }),
    platform: { type: 'terraform', terraform: { module: 'local', retries: 1, retryBackoff: '1s', batchWindow: 50 } },
  };
  const created = await cli(home, ['nodegroups', 'create', '-f', '-', '--timeout', '5m'], { input: JSON.stringify(group) });
  t.is(created.code, 0, created.stderr);
  t.regex(created.stderr, /platform\.progress\s+tf {2}init begin/);
  t.regex(created.stderr, /platform\.progress\s+tf {2}apply \w+ r1-origin-\w+/);
  t.regex(created.stderr, /node\.state\s+tf {2}r1-origin-\w+ STARTED → INSERVICE/);
  const deleted = await cli(home, ['nodegroups', 'delete', 'tf', '--yes', '--timeout', '5m']);
  t.is(deleted.code, 0, deleted.stderr);
  t.regex(deleted.stderr, /platform\.progress\s+tf {2}apply/);
  t.regex(deleted.stderr, /node\.state\s+tf {2}r1-origin-\w+ \S+ → removed/);
  t.regex(deleted.stderr, /nodegroup\.changed\s+tf {2}deleted/);
});
