// An agent under systemd (config/systemd/switchyard-agent.service) is restarted with the same
// environment file for the node's whole life, whose bootstrap token expires after a day: the
// agent keeps each renewed token in SWITCHYARD_NODE_TOKEN_FILE and, at start, uses whichever
// token expires last, so a restart after the bootstrap token expired still reports.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import jwt from 'jsonwebtoken';
import { projectPath } from '../../src/paths.js';

import { JWT_SECRET, staticGroup, startTestService, tempDir, type TestService } from '../helpers/service.js';
import { until } from '../helpers/until.js';

/** Runs the agent for node o1 until its log says how its first heartbeat went. */
async function firstOutcome(svc: TestService, dir: string, token: string): Promise<string> {
  const proc = spawn(process.execPath, [projectPath('dist', 'src', 'agent', 'main.js'), '--node-id', 'o1'], {
    env: {
      PATH: process.env.PATH ?? '',
      SWITCHYARD_URL: svc.url,
      SWITCHYARD_NODE_ID: 'o1',
      SWITCHYARD_NODE_TOKEN: token,
      SWITCHYARD_NODE_ROLE: 'origin',
      SWITCHYARD_NODE_DIR: dir,
      SWITCHYARD_NODE_TOKEN_FILE: join(dir, 'token'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise((r) => proc.once('exit', r));
  try {
    return await new Promise<string>((resolve, reject) => {
      let out = '';
      proc.stdout.on('data', (c: Buffer) => {
        out += c.toString();
        const m = /"msg":"(heartbeats accepted|heartbeat refused: [0-9]+)"/.exec(out);
        if (m) resolve(m[1]!);
      });
      void exited.then(() => reject(new Error(`the agent exited: ${out}`)));
    });
  } finally {
    proc.kill('SIGTERM');
    await exited;
  }
}

test('the agent keeps its renewed token and uses it after a restart with an expired bootstrap token; a newer bootstrap token wins', async (t) => {
  const svc = await startTestService({ groups: [staticGroup({ nodes: [{ id: 'o1', role: 'origin', region: 'r1' }] })] });
  t.teardown(() => svc.close());
  const dir = tempDir('switchyard-agent-token-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));

  // A bootstrap token past half its life (1 h of the default 24 h): the first reply renews it.
  const bootstrap = svc.signer.nodeToken('g', 'o1', 3_600_000);
  t.is(await firstOutcome(svc, dir, bootstrap), 'heartbeats accepted');
  const kept = await until(
    async () => {
      try {
        const text = readFileSync(join(dir, 'token'), 'utf8');
        return text && text !== bootstrap ? text : false;
      } catch {
        return false;
      }
    },
    10_000,
    'the renewed token in the file',
  );
  t.is((await svc.send('POST', '/as/v1/nodes/o1/events', { ready: true, metrics: {}, streams: [] }, kept)).status, 200, 'the kept token is a working node token');

  // Restarted with the same environment, whose token has expired since.
  const expired = jwt.sign({ sub: 'node:g/o1', role: 'node', nodeGroup: 'g', nodeId: 'o1', exp: Math.floor(Date.now() / 1000) - 60 }, JWT_SECRET, { algorithm: 'HS256', jwtid: randomUUID() });
  t.is((await svc.send('POST', '/as/v1/nodes/o1/events', { ready: true, metrics: {}, streams: [] }, expired)).status, 401);
  t.is(await firstOutcome(svc, dir, expired), 'heartbeats accepted', 'the kept token, not the expired one');

  // After a revocation the operator hands out a new bootstrap token: it expires after the kept one, and wins.
  t.is((await svc.send('POST', '/as/v1/nodegroups/g/nodes/o1/token/revoke', undefined)).status, 200);
  const fresh = ((await svc.send('POST', '/as/v1/nodegroups/g/nodes/o1/token', undefined)).json as { accessToken: string }).accessToken;
  writeFileSync(join(dir, 'token'), svc.signer.nodeToken('g', 'o1', 3_600_000), { mode: 0o600 });
  t.is(await firstOutcome(svc, dir, fresh), 'heartbeats accepted');
});
