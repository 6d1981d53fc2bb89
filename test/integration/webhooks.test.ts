// Event webhooks (docs/webhooks.md) with a real receiver in its own process, checking every
// signature with the standardwebhooks package: every matching event arrives, signed, in order,
// though the receiver dies mid-stream and comes back and the service restarts in between; a
// receiver that cannot verify the signature refuses and the delivery says so; bad URLs are refused.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { projectPath } from '../../src/paths.js';

import { staticGroup, startTestService, type TestService, tempDir } from '../helpers/service.js';
import { until } from '../helpers/until.js';
import { freePort } from '../helpers/ports.js';
import { ladder } from '../helpers/fixtures.js';
import { waitForEvents } from '../helpers/events.js';

const secret = () => `whsec_${randomBytes(24).toString('base64')}`;

/** The receiver process; resolves once it listens. */
async function receiver(port: number, key: string, file: string, dieOnRequest?: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [projectPath('dist', 'test', 'helpers', 'webhook-receiver.js'), String(port), key, file, ...(dieOnRequest ? [String(dieOnRequest)] : [])], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout!.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the receiver exited ${code}`)));
  });
  return child;
}

const received = (file: string) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { id?: string; type?: string; seq?: number; bad?: boolean })
    : [];

test('every matching event arrives signed and in order, across a receiver that dies mid-stream and a restart of the service', async (t) => {
  const dir = tempDir('switchyard-webhooks-');
  const file = join(dir, 'received.jsonl');
  const port = await freePort();
  const key = secret();
  const dataDir = join(dir, 'data');
  const config = { webhooks: [{ id: 'ours', url: `http://127.0.0.1:${port}/hook`, secret: key, events: ['provision.*'] }] };
  const start = () => startTestService({ dataDir, groups: [staticGroup({ name: 'g' })], config });
  let svc: TestService = await start();
  let rx = await receiver(port, key, file, 6);
  t.teardown(async () => {
    rx.kill('SIGKILL');
    await svc.close().catch(() => {});
  });

  // Ten events: the receiver dies on the sixth request, before answering it.
  for (let i = 0; i < 10; i++) t.is((await svc.send('POST', '/as/v1/provision/g', ladder(`a${i}`))).status, 201);
  await new Promise((r) => (rx.exitCode !== null ? r(null) : rx.once('exit', r)));
  t.is(received(file).length, 5, 'five taken before it died');
  // An event counts in the backlog once its log write is durable, a moment after its request was
  // answered (a CI run read the state before the last ones were): wait for all ten in the log.
  await waitForEvents(svc.url, svc.adminToken, (s) => s.filter((e) => e.type === 'provision.changed').length >= 10);
  await until(async () => ((await svc.get('/as/v1/webhooks/ours')).json as { delivery: { consecutiveFailures: number } }).delivery.consecutiveFailures >= 1, 10_000, 'the failure to show');
  const failing = (await svc.get('/as/v1/webhooks/ours')).json as { delivery: { lastError: string; cursor: number; backlog: number } };
  t.truthy(failing.delivery.lastError);
  t.true(failing.delivery.backlog >= 5, `backlog ${failing.delivery.backlog} after cursor ${failing.delivery.cursor}`);

  // More events while it is down, then the service restarts, then more, then the receiver is back.
  for (let i = 0; i < 5; i++) t.is((await svc.send('POST', '/as/v1/provision/g', ladder(`b${i}`))).status, 201);
  await svc.close({ stopNodes: false });
  svc = await start();
  for (let i = 0; i < 5; i++) t.is((await svc.send('DELETE', `/as/v1/provision/g/a${i}`, undefined)).status, 204);
  rx = await receiver(port, key, file);

  // Every provision.changed event of the log arrives: none lost, in id order (a resend is allowed).
  await until(async () => new Set(received(file).map((r) => r.seq)).size >= 20, 60_000, 'all twenty events at the receiver');
  const got = received(file);
  t.false(
    got.some((r) => r.bad),
    'every signature verified',
  );
  const seqs = got.map((r) => r.seq!);
  for (let i = 1; i < seqs.length; i++) t.true(seqs[i]! >= seqs[i - 1]!, `in order: ${seqs.join(',')}`);
  t.is(new Set(seqs).size, 20);
  t.true(
    got.every((r) => r.type === 'provision.changed' && r.id === String(r.seq)),
    'webhook-id is the event id',
  );
  const state = (await svc.get('/as/v1/webhooks/ours')).json as { delivery: { consecutiveFailures: number; lastSuccessAt: number; lost: number }; secret: string; source: string };
  t.like(state, { secret: 'whsec_(kept)', source: 'config', delivery: { consecutiveFailures: 0, lost: 0 } });
  t.regex((await svc.get('/as/v1/metrics')).text, /switchyard_webhook_deliveries_total\{endpoint="ours",outcome="delivered"\} \d+/);
});

test('an endpoint added through the API gets events from then on; one the receiver cannot verify keeps failing, and says so; bad URLs are refused', async (t) => {
  const dir = tempDir('switchyard-webhooks-api-');
  const file = join(dir, 'received.jsonl');
  const port = await freePort();
  const key = secret();
  const svc = await startTestService({ groups: [staticGroup({ name: 'g' })] });
  const rx = await receiver(port, key, file);
  t.teardown(async () => {
    rx.kill('SIGKILL');
    await svc.close();
  });
  t.is((await svc.send('POST', '/as/v1/provision/g', ladder('before'))).status, 201);
  // An event is logged a moment after the request that made it is answered: the endpoint made
  // once it is logged must not get it.
  await waitForEvents(svc.url, svc.adminToken, (s) => s.some((e) => e.type === 'provision.changed' && e.stream === 'before'));
  const created = await svc.send('POST', '/as/v1/webhooks', { id: 'good', url: `http://127.0.0.1:${port}/x`, secret: key, groups: ['g'], events: ['provision.changed'] });
  t.is(created.status, 201, created.text);
  t.is((await svc.send('POST', '/as/v1/webhooks', { id: 'forged', url: `http://127.0.0.1:${port}/y`, secret: secret() })).status, 201);
  t.is((await svc.send('POST', '/as/v1/provision/g', ladder('after'))).status, 201);
  await until(async () => received(file).some((r) => !r.bad && r.type === 'provision.changed'), 10_000, 'the event after the endpoint was made');
  await until(async () => ((await svc.get('/as/v1/webhooks/forged')).json as { delivery: { lastError: string | null } }).delivery.lastError === 'HTTP 401', 10_000, 'the refusal');
  t.is(received(file).filter((r) => !r.bad).length, 1, 'only the event made after it, not the one before');
  t.true(
    received(file).some((r) => r.bad),
    'the receiver found the other endpoint’s signatures bad',
  );

  const list = (await svc.get('/as/v1/webhooks')).json as Array<{ id: string; secret: string }>;
  t.deepEqual(
    list.map((w) => [w.id, w.secret]),
    [
      ['forged', 'whsec_(kept)'],
      ['good', 'whsec_(kept)'],
    ],
  );
  for (const url of ['http://169.254.169.254/latest', 'http://[fe80::1]/', 'ftp://example.com/', 'http://metadata.google.internal/']) {
    const r = await svc.send('POST', '/as/v1/webhooks', { url, secret: key });
    t.is(r.status, 400, `${url}: ${r.text}`);
  }
  t.is((await svc.send('DELETE', '/as/v1/webhooks/forged', undefined)).status, 204);
  t.is((await svc.send('GET', '/as/v1/webhooks/forged', undefined)).status, 404);
});
