// The Terraform http backend of cluster mode (src/http/routes/terraform-state.ts over
// src/cluster/terraform-state.ts) on a real nats-server, spoken by the real CLI: two instances'
// routes in this process, each with its own secret, whose belief of who serves the group the test
// sets (a takeover, an old owner paused past its lease). An old owner's apply that was under way
// when the group moved cannot save its state; the new owner breaks its lock and goes on from the
// state as it was; wrong credentials get nothing.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import Router from '@koa/router';
import test from 'ava';
import Koa from 'koa';
import pino from 'pino';
import { connectNats, jet, provision } from '../../src/cluster/nats.js';
import { TerraformState } from '../../src/cluster/terraform-state.js';
import type { EventBody } from '../../src/domain/events.js';
import type { AppContextExtras, AppState } from '../../src/http/context.js';
import { installRequestLogger, requestFrame } from '../../src/http/middleware/request-context.js';
import { mountTerraformState } from '../../src/http/routes/terraform-state.js';
import type { Services } from '../../src/http/services.js';
import { findProgram } from '../../src/os/programs.js';
import { backendEnv, httpBackend, USERNAME } from '../../src/platforms/terraform/backend.js';
import { tempDir } from '../helpers/fixtures.js';
import { request } from '../helpers/http.js';
import { NatsCluster } from '../helpers/nats-cluster.js';
import { nodesInTfState, readTfLock, readTfState } from '../helpers/tfstate-reader.js';
import { until } from '../helpers/until.js';

const binary = process.env.SWITCHYARD_TERRAFORM_BIN ?? findProgram('terraform') ?? findProgram('tofu');
const real = binary ? test : test.skip;
const log = pino({ level: 'silent' });

interface Instance {
  id: string;
  url: string;
  secret: Uint8Array;
  /** The epoch this instance believes it serves group `g` at. */
  epoch: number | null;
}

async function instance(id: string, kv: ConstructorParameters<typeof TerraformState>[0]['kv'], events: EventBody[], t: { teardown(fn: () => void): void }): Promise<Instance> {
  const me: Instance = { id, url: '', secret: randomBytes(32), epoch: null };
  const state = new TerraformState({ kv, instance: id, servingEpoch: () => me.epoch, maxBytes: () => 1 << 20, emit: (e) => events.push(...e), log });
  const services = {
    terraformState: { secret: me.secret, state },
    actors: { group: (name: string) => (name === 'g' ? {} : undefined) },
    config: { server: { bodyLimit: 1 << 20 } },
  } as unknown as Services;
  const app = new Koa<AppState, AppContextExtras>();
  app.silent = true;
  const router = new Router<AppState, AppContextExtras>();
  mountTerraformState(router, services);
  installRequestLogger(app, log);
  app.use(requestFrame(log, () => {}, {}));
  app.use(router.routes());
  app.use(router.allowedMethods());
  const server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  t.teardown(() => server.close());
  me.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return me;
}

/**
 * A root module of terraform_data resources, one per name; creating one waits until the file
 * `gate` exists, when one is given (a slow cloud the test lets finish when it has seen what it
 * wanted: a fixed time was a race with the other instance's two cold CLI starts on a loaded
 * machine). The wait gives up by itself after two minutes.
 */
function workDir(root: string, name: string, at: Instance): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  const main = {
    terraform: { backend: { http: httpBackend(at, 'g') } },
    variable: { names: { type: 'set(string)' }, gate: { type: 'string', default: '' } },
    resource: {
      terraform_data: {
        n: { for_each: '${var.names}', input: '${each.key}', provisioner: [{ 'local-exec': { command: GATE_WAIT, environment: { GATE: '${var.gate}' } } }] },
      },
    },
  };
  writeFileSync(join(dir, 'main.tf.json'), JSON.stringify(main));
  return dir;
}

function terraform(dir: string, at: Instance, args: string[], onOutput?: (text: string) => void): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const env = { PATH: process.env.PATH, HOME: process.env.HOME, TF_IN_AUTOMATION: '1', CHECKPOINT_DISABLE: '1', ...backendEnv(at, 'g') };
    const child = spawn(binary!, args, { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const keep = (b: Buffer) => {
      out += b.toString();
      onOutput?.(out);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('close', (code) => resolve({ code, out }));
  });
}

const GATE_WAIT = 'i=0; while [ -n "$GATE" ] && [ ! -e "$GATE" ] && [ "$i" -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done';
const vars = (names: string[], gate = '') => ['-var', `names=${JSON.stringify(names)}`, '-var', `gate=${gate}`];

real(
  `the http backend with the real CLI (${binary ?? 'none'}): a takeover mid-apply refuses the old owner's state write, the new owner breaks its lock and goes on; wrong credentials get 401`,
  async (t) => {
    const nats = await NatsCluster.start(3);
    t.teardown(() => nats.stop());
    const j = await jet(await connectNats(nats.urls(), 'terraform-backend-test'));
    t.teardown(() => j.nc.close());
    // A fresh cluster may not answer stream creation at once (as an instance, retry).
    let tfstate!: Awaited<ReturnType<typeof provision>>['tfstate'];
    await until(async () => !!(tfstate = (await provision(j, 3, 3000)).tfstate), 30_000, 'the buckets');
    const events: EventBody[] = [];
    const a = await instance('i1', tfstate, events, t);
    const b = await instance('i2', tfstate, events, t);
    const root = tempDir('switchyard-tf-backend-');
    t.teardown(() => rmSync(root, { recursive: true, force: true }));

    // Credentials: none, a guess, the other instance's, another group's: 401 alike.
    const statePath = '/as/v1/internal/terraform/g/state';
    const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });
    const mine = backendEnv(a, 'g') as { TF_HTTP_PASSWORD: string };
    t.is((await request(a.url, 'GET', statePath)).status, 401);
    t.is((await request(a.url, 'GET', statePath, undefined, basic(USERNAME, 'guess'))).status, 401);
    t.is((await request(a.url, 'GET', statePath, undefined, basic(USERNAME, (backendEnv(b, 'g') as { TF_HTTP_PASSWORD: string }).TF_HTTP_PASSWORD))).status, 401, "another instance's");
    t.is((await request(a.url, 'GET', '/as/v1/internal/terraform/h/state', undefined, basic(USERNAME, mine.TF_HTTP_PASSWORD))).status, 401, "another group's");
    const fine = await request(a.url, 'GET', statePath, undefined, basic(USERNAME, mine.TF_HTTP_PASSWORD));
    t.is(fine.status, 204, 'no state yet');

    // i1 owns the group (epoch 1) and makes two nodes.
    a.epoch = 1;
    const dirA = workDir(root, 'i1', a);
    t.is((await terraform(dirA, a, ['init', '-input=false', '-no-color', '-reconfigure'])).code, 0);
    const made = await terraform(dirA, a, ['apply', '-auto-approve', '-input=false', '-no-color', ...vars(['n1', 'n2'])]);
    t.is(made.code, 0, made.out);
    t.deepEqual(nodesInTfState(await readTfState(nats.urls(), 'g')), ['n1', 'n2']);
    t.false(existsSync(join(dirA, 'terraform.tfstate')), 'nothing kept in the working directory');

    // i1 starts an apply that takes a while (a third node); it holds the lock, its node is being made.
    const gate = join(root, 'let-i1-finish');
    const slow = terraform(dirA, a, ['apply', '-auto-approve', '-input=false', '-no-color', ...vars(['n1', 'n2', 'n3'], gate)]);
    await until(async () => (await readTfLock(nats.urls(), 'g'))?.instance === 'i1', 20_000, "i1's lock");
    // i1 pauses past its lease; i2 takes the group at epoch 2. i1's Terraform, a child process, goes on.
    a.epoch = null;
    b.epoch = 2;
    const dirB = workDir(root, 'i2', b);
    t.is((await terraform(dirB, b, ['init', '-input=false', '-no-color', '-reconfigure'])).code, 0);
    // The new owner sees the state as i1 last saved it: two nodes, nothing to do (exit 0, not 2).
    const plan = await terraform(dirB, b, ['plan', '-detailed-exitcode', '-input=false', '-no-color', '-lock-timeout=10s', ...vars(['n1', 'n2'])]);
    t.is(plan.code, 0, plan.out);
    t.true(
      events.some((e) => e.type === 'platform.progress' && e.phase === 'lock-broken' && /i1 \(epoch 1/.test(e.message ?? '')),
      "i1's lock broken, and said so",
    );

    // i1 resumes: its apply finishes, and its state write is refused.
    writeFileSync(gate, '');
    const late = await slow;
    t.not(late.code, 0, late.out);
    t.regex(late.out, /HTTP error: 409/);
    t.log(
      `the old owner's Terraform said: ${late.out
        .split('\n')
        .filter((l) => /Error|409/.test(l))
        .slice(0, 4)
        .join(' | ')}`,
    );
    t.true(existsSync(join(dirA, 'errored.tfstate')), 'Terraform kept what it could not save, where it ran');
    t.deepEqual(nodesInTfState(await readTfState(nats.urls(), 'g')), ['n1', 'n2'], "the shared state is not the stale owner's");
    t.true(
      events.some((e) => e.type === 'platform.error' && e.operation === 'state' && /write refused/.test(e.message)),
      'the refusal is an event',
    );
    // The same, by hand: the old owner can neither lock nor write.
    const lockPath = '/as/v1/internal/terraform/g/lock';
    const asA = basic(USERNAME, mine.TF_HTTP_PASSWORD);
    t.is((await request(a.url, 'LOCK', lockPath, { ID: 'late-lock' }, asA)).status, 409);
    t.is((await request(a.url, 'POST', `${statePath}?ID=late-lock`, { version: 4, serial: 99, resources: [] }, asA)).status, 409);

    // The new owner goes on from there.
    const next = await terraform(dirB, b, ['apply', '-auto-approve', '-input=false', '-no-color', ...vars(['n1', 'n2', 'n4'])]);
    t.is(next.code, 0, next.out);
    t.regex(next.out, /1 added, 0 changed, 0 destroyed/);
    t.deepEqual(nodesInTfState(await readTfState(nats.urls(), 'g')), ['n1', 'n2', 'n4']);
    t.is(await readTfLock(nats.urls(), 'g'), null);
  },
);
