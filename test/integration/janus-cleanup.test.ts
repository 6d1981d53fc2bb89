// A Janus node's agent killed outright (kill -9) leaves Janus running in the node's namespace. What
// removes it: the local platform's destroy of the node (it stops the pid files' process groups, then
// removes the namespace the node directory records), or a new start of the same node (names come
// from the node id: the new runtime stops the stale Janus and makes the namespace afresh).
// Namespaces made and removed at once share their bridge safely. Run under the heavy-test lock (HELPERS.md).
import { execFileSync, fork } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { janusPaths } from '../../src/agent/webrtc/janus/config.js';
import { JanusRuntime } from '../../src/agent/webrtc/janus/runtime.js';
import { type NetnsPlan, netnsPlan } from '../../src/policy/network/netns-plan.js';
import { NETNS_RECORD, netnsDown, netnsUp } from '../../src/os/netns.js';
import { alive } from '../../src/os/process-group.js';
import { projectPath } from '../../src/paths.js';
import { LocalPlatform } from '../../src/platforms/local.js';
import { JANUS_SUBNET, janusTools, leftovers, within } from '../helpers/janus.js';

const { janus } = janusTools();

/** Starts the stand-in agent (test/helpers/janus-child.ts) and kills it with SIGKILL once its Janus runs. */
async function killedAgent(t: ExecutionContext, dir: string, nodeId: string, loopback: string): Promise<{ agentPid: number; janusPid: number }> {
  mkdirSync(dir, { recursive: true });
  const child = fork(projectPath('dist', 'test', 'helpers', 'janus-child.js'), [dir, nodeId, loopback], { stdio: 'ignore' });
  t.teardown(() => void child.kill('SIGKILL'));
  const said = await within(
    30_000,
    'the stand-in agent starts Janus',
    new Promise<{ ready?: number; problem?: string }>((resolve, reject) => {
      child.once('message', (m) => resolve(m as { ready?: number; problem?: string }));
      child.once('exit', (code) => reject(new Error(`the stand-in agent exited with ${code}`)));
    }),
  );
  if (!said.ready) throw new Error(`janus did not start: ${said.problem}`);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
  return { agentPid: child.pid!, janusPid: said.ready };
}

test.serial('the local platform’s destroy of a node whose agent was killed stops its Janus and removes its namespace', async (t) => {
  t.timeout(60_000);
  const dataDir = mkdtempSync(join(tmpdir(), 'sy-janus-platform-'));
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  const nodeId = `jc-platform-${process.pid}`;
  const dir = join(dataDir, 'nodes', nodeId);
  const plan = netnsPlan(nodeId, '127.5.0.20', JANUS_SUBNET);
  const { agentPid, janusPid } = await killedAgent(t, dir, nodeId, '127.5.0.20');
  // What the kill left: Janus in the namespace, the namespace, the record.
  t.true(alive(janusPid));
  t.deepEqual(leftovers([plan]).sort(), [plan.namespace, plan.hostLink].sort());
  t.true(existsSync(join(dir, NETNS_RECORD)));
  t.is(Number(readFileSync(janusPaths(dir).pid, 'utf8')), janusPid);

  const platform = new LocalPlatform({ serviceUrl: 'http://127.0.0.1:1', dataDir, nodeToken: () => 'unused' });
  await platform.destroy({ id: nodeId, role: 'origin', region: 'local', platform: { type: 'local', address: '127.5.0.20', pid: agentPid } });
  t.false(alive(janusPid), 'janus stopped');
  t.deepEqual(leftovers([plan]), []);
  t.false(existsSync(dir));
});

test.serial('a new start of a node whose agent was killed reclaims its namespace from the stale Janus', async (t) => {
  t.timeout(60_000);
  const dir = mkdtempSync(join(tmpdir(), 'sy-janus-restart-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const nodeId = `jc-restart-${process.pid}`;
  const plan = netnsPlan(nodeId, '127.5.0.21', JANUS_SUBNET);
  const { janusPid } = await killedAgent(t, dir, nodeId, '127.5.0.21');
  t.true(alive(janusPid));

  const logs: string[] = [];
  const runtime = new JanusRuntime({ nodeId, dir, binary: janus, network: { kind: 'netns', plan }, log: (m) => logs.push(m) });
  t.teardown(() => runtime.stop());
  await runtime.start();
  t.is(runtime.problem, null);
  t.false(alive(janusPid), 'the stale janus was stopped');
  t.true(logs.includes('stopped a janus left by an earlier agent of this node'));
  t.not(runtime.pid, janusPid);
  await runtime.stop();
  t.deepEqual(leftovers([plan]), []);
  t.false(existsSync(join(dir, NETNS_RECORD)));
});

test.serial('namespaces made and removed at once: every node made is on the bridge, and the last one down takes the bridge along', async (t) => {
  const plans = [30, 31, 32, 33].map((n) => netnsPlan(`jc-race-${n}-${process.pid}`, `127.5.0.${n}`, JANUS_SUBNET));
  t.teardown(() => Promise.all(plans.map((p) => netnsDown(p))).then(() => undefined));
  const onBridge = () => execFileSync('ip', ['-o', 'link', 'show', 'master', plans[0]!.bridge], { encoding: 'utf8' });
  for (let round = 0; round < 3; round++) {
    const [first, ...rest] = plans as [NetnsPlan, ...NetnsPlan[]];
    await netnsUp(first);
    // The only node goes down (and would take the bridge) while three others come up.
    await Promise.all([netnsDown(first), ...rest.map((p) => netnsUp(p))]);
    const links = onBridge();
    for (const p of rest) t.true(links.includes(` ${p.hostLink}@`), `round ${round}: ${p.hostLink} on the bridge`);
    await Promise.all(rest.map((p) => netnsDown(p)));
    t.deepEqual(leftovers(plans), [], `round ${round}`);
  }
});
