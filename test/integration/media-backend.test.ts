// The nginx-rtmp backend against real nginx and ffmpeg, without the control plane: configs that
// nginx accepts, a crash seen and repaired, a parent change by reload that keeps its viewers, and
// ports checked before start.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { AdmissionGate } from '../../src/agent/admission/gate.js';
import type { BackendReport } from '../../src/agent/backend.js';
import { NginxRtmpBackend, type NginxBackendOptions } from '../../src/agent/media/backend.js';
import { nodePaths, renderNginxConfig } from '../../src/agent/media/nginx-config.js';
import { tail } from '../../src/agent/media/nginx-process.js';
import { alive } from '../../src/os/process-group.js';
import { allFree } from '../../src/agent/media/ports.js';
import { ROLES, type Role } from '../../src/domain/vocabulary.js';

import { mediaTools, play, playFrames, Processes, publish, RTMP_MODULE } from '../helpers/media.js';
import { until } from '../helpers/until.js';

const tools = mediaTools();

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'sy-media-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function backend(
  t: { teardown(fn: () => Promise<void>): void },
  dir: string,
  o: Partial<NginxBackendOptions> & { nodeId: string; role: Role; address: string },
  logs: string[] = [],
): NginxRtmpBackend {
  // These tests drive nginx without a control plane: a gate told that the group admits anyone.
  const gate = new AdmissionGate('g', o.nodeId);
  gate.update({ required: false, keys: [], leewayMs: 0 }, undefined);
  const b = new NginxRtmpBackend({
    gate,
    scope: 'live',
    rtmpPort: 19350,
    statPort: 19380,
    dir: join(dir, o.nodeId),
    nginx: tools.nginx,
    ffmpeg: tools.ffmpeg,
    modulePath: RTMP_MODULE,
    log: (msg, extra) => logs.push(`${msg} ${JSON.stringify(extra ?? {})}`),
    ...o,
  });
  t.teardown(() => b.stop());
  return b;
}

const stream = (r: BackendReport, name: string) => r.streams.find((s) => s.name === name);

/** The last lines of the nodes' nginx error logs, for a playback that ended short. */
const nginxLogs = (dir: string, ids: string[]) => ids.map((id) => `${id}: ${tail(nodePaths(join(dir, id)).errorLog, 8)}`).join('\n');

test('nginx accepts the rendered config of every role', (t) => {
  const dir = tempDir(t);
  for (const role of ROLES) {
    const nodeDir = join(dir, role);
    mkdirSync(join(nodeDir, 'tmp'), { recursive: true });
    const conf = renderNginxConfig({
      nodeId: `n-${role}`,
      role,
      scope: 'live',
      address: '127.0.60.2',
      rtmpPort: 19350,
      statPort: 19380,
      dir: nodeDir,
      modulePath: RTMP_MODULE,
      parent: role === 'edge' || role === 'relay' ? { address: '127.0.60.3', port: 19350 } : null,
      ...(process.getuid?.() === 0 ? { user: userInfo().username } : {}),
    });
    writeFileSync(nodePaths(nodeDir).config, conf);
    const r = spawnSync(tools.nginx, ['-t', '-p', nodeDir, '-c', nodePaths(nodeDir).config, '-e', nodePaths(nodeDir).errorLog], { encoding: 'utf8' });
    t.is(r.status, 0, `${role}: ${r.stderr}`);
  }
});

test('an origin reports its listeners; a crash of nginx is reported, repaired, and stop leaves nothing behind', async (t) => {
  const dir = tempDir(t);
  const logs: string[] = [];
  const o = backend(t, dir, { nodeId: 'o1', role: 'origin', address: '127.0.60.2' }, logs);
  await o.start();
  const first = await o.report();
  t.true(first.ready, first.problem);
  t.deepEqual(first.listeners, { publish: { protocol: 'rtmp', port: 19350 }, subscribe: { protocol: 'rtmp', port: 19350 } });
  t.like(first.metrics, { 'connections.publisher': 0, 'connections.subscriber': 0, 'connections.clusterchildren': 0 });

  const master = Number(readFileSync(nodePaths(join(dir, 'o1')).pid, 'utf8'));
  process.kill(master, 'SIGKILL');
  // The next report says what happened, even if nginx is already back by then.
  const down = await until(
    async () => {
      const r = await o.report();
      return r.ready ? false : r;
    },
    5000,
    'the crash to be reported',
  );
  t.regex(down.problem ?? '', /nginx killed by SIGKILL/);
  await until(async () => (await o.report()).ready, 10_000, 'nginx to be restarted');
  const again = Number(readFileSync(nodePaths(join(dir, 'o1')).pid, 'utf8'));
  t.not(again, master);
  t.true(logs.some((l) => l.startsWith('nginx down')));

  await o.stop();
  t.false(alive(again));
  t.true(await allFree('127.0.60.2', [19350, 19380]), 'ports free after stop');
});

test('a parent change reloads the edge: new viewers pull from the new parent, viewers of the old one stay counted until they leave', async (t) => {
  const dir = tempDir(t);
  const p = new Processes(t);
  const [o1, o2] = [backend(t, dir, { nodeId: 'o1', role: 'origin', address: '127.0.60.3' }), backend(t, dir, { nodeId: 'o2', role: 'origin', address: '127.0.60.4' })];
  const logs: string[] = [];
  const edge = backend(t, dir, { nodeId: 'e1', role: 'edge', address: '127.0.60.5' }, logs);
  await Promise.all([o1.start(), o2.start(), edge.start()]);
  publish(p, tools.ffmpeg, 'rtmp://127.0.60.3:19350/live/cam1');
  publish(p, tools.ffmpeg, 'rtmp://127.0.60.4:19350/live/cam2');
  await until(async () => stream(await o1.report(), 'cam1')?.publishing && stream(await o2.report(), 'cam2')?.publishing, 10_000, 'both publishers');
  await edge.apply({ parent: { nodeId: 'o1', address: '127.0.60.3', port: 19350, protocol: 'rtmp' }, drain: false });

  // A viewer who stays, on the edge under o1.
  const viewer = p.start(tools.ffmpeg, ['-nostdin', '-loglevel', 'error', '-rw_timeout', '3000000', '-i', 'rtmp://127.0.60.5:19350/live/cam1', '-f', 'null', '-']);
  await until(async () => stream(await edge.report(), 'cam1')?.subscribers === 1, 15_000, 'the viewer on the edge');
  // The edge's pull is a subscriber of the origin, and a cluster child.
  const origin = await until(
    async () => {
      const r = await o1.report();
      return stream(r, 'cam1')?.subscribers === 1 ? r : false;
    },
    10_000,
    "the edge's pull on the origin",
  );
  t.is(origin.metrics['connections.clusterchildren'], 1);
  t.is(stream(await edge.report(), 'cam1')?.publishing, false, 'a pulled stream is not published on the edge');

  await edge.apply({ parent: { nodeId: 'o2', address: '127.0.60.4', port: 19350, protocol: 'rtmp' }, drain: false });
  t.true(
    logs.some((l) => l.startsWith('nginx reloaded')),
    logs.join('\n'),
  );
  const after = await edge.report();
  t.is(stream(after, 'cam1')?.subscribers, 1, 'the viewer on the old worker is still counted');
  t.is(after.metrics['connections.subscriber'], 1);

  const played = await playFrames(p, tools, 'rtmp://127.0.60.5:19350/live/cam2', 25, (l) => t.log(`${l}\n${nginxLogs(dir, ['o2', 'e1'])}`));
  t.true(played.frames >= 25, `frames of cam2 through the re-pointed edge: ${played.frames}\n${played.output}`);
  t.false(viewer.done, 'the old viewer kept watching');

  await viewer.stop();
  await until(async () => stream(await edge.report(), 'cam1') === undefined, 10_000, 'the old worker to leave with its viewer');
});

test('taken ports are seen before nginx starts, and other ports are used and reported', async (t) => {
  const dir = tempDir(t);
  const squatter = createServer();
  await new Promise<void>((resolve) => squatter.listen(19350, '127.0.60.6', resolve));
  t.teardown(() => squatter.close());
  const logs: string[] = [];
  const o = backend(t, dir, { nodeId: 'o1', role: 'origin', address: '127.0.60.6' }, logs);
  await o.start();
  const r = await o.report();
  t.true(r.ready, r.problem);
  t.not(r.listeners.publish?.port, 19350);
  t.true(logs.some((l) => l.startsWith('ports taken')));
});

test('a relay pulls from its origin and serves an edge: origin → relay → edge → player', async (t) => {
  const dir = tempDir(t);
  const p = new Processes(t);
  const origin = backend(t, dir, { nodeId: 'o1', role: 'origin', address: '127.0.60.7' });
  const relay = backend(t, dir, { nodeId: 'r1', role: 'relay', address: '127.0.60.8' });
  const edge = backend(t, dir, { nodeId: 'e1', role: 'edge', address: '127.0.60.9' });
  await Promise.all([origin.start(), relay.start(), edge.start()]);
  await relay.apply({ parent: { nodeId: 'o1', address: '127.0.60.7', port: 19350 }, drain: false });
  await edge.apply({ parent: { nodeId: 'r1', address: '127.0.60.8', port: 19350 }, drain: false });
  publish(p, tools.ffmpeg, 'rtmp://127.0.60.7:19350/live/cam1');
  await until(async () => stream(await origin.report(), 'cam1')?.publishing, 10_000, 'the publisher on the origin');
  const played = await playFrames(p, tools, 'rtmp://127.0.60.9:19350/live/cam1', 25, (l) => t.log(`${l}\n${nginxLogs(dir, ['o1', 'r1', 'e1'])}`));
  t.true(played.frames >= 25, `${played.frames} frames\n${played.output}`);
  const r = await relay.report();
  t.deepEqual(r.listeners, { subscribe: { protocol: 'rtmp', port: 19350 } }, 'a relay takes no publishers');
});

test('a transcoder runs a job that arrives after its publisher, and moves the renditions when the origin changes', async (t) => {
  const dir = tempDir(t);
  const p = new Processes(t);
  const [o1, o2] = [backend(t, dir, { nodeId: 'o1', role: 'origin', address: '127.0.60.10' }), backend(t, dir, { nodeId: 'o2', role: 'origin', address: '127.0.60.11' })];
  const tc = backend(t, dir, { nodeId: 't1', role: 'transcoder', address: '127.0.60.12' });
  await Promise.all([o1.start(), o2.start(), tc.start()]);
  const job = (origin: string, address: string) => ({
    stream: 'show',
    origin: { nodeId: origin, address, port: 19350, protocol: 'rtmp' },
    renditions: [{ name: 'show_small', level: 1, videoBR: 100_000, videoWidth: 160, videoHeight: 96, videoFPS: 10, audioBR: 32_000 }],
  });
  // The publisher first, as after a lookup: the job only comes with the next heartbeat reply.
  publish(p, tools.ffmpeg, 'rtmp://127.0.60.12:19350/live/show');
  await until(async () => stream(await tc.report(), 'show')?.publishing, 10_000, 'the publisher on the transcoder');
  const report = await tc.report();
  t.is(report.metrics['connections.publisher'], 1);
  await tc.apply({ parent: null, drain: false, transcode: [job('o1', '127.0.60.10')] });
  await until(async () => stream(await o1.report(), 'show_small')?.publishing, 20_000, 'the rendition on o1');
  t.is((await tc.report()).metrics['connections.subscriber'], 0, "the ladder's own reading is not a viewer");

  await tc.apply({ parent: null, drain: false, transcode: [job('o2', '127.0.60.11')] });
  await until(async () => stream(await o2.report(), 'show_small')?.publishing, 20_000, 'the rendition on o2');
  await until(async () => stream(await o1.report(), 'show_small') === undefined, 10_000, 'the rendition to leave o1');
  const played = await play(p, tools, 'rtmp://127.0.60.11:19350/live/show_small', 2);
  t.deepEqual([played.width, played.height], [160, 96]);

  // The job ends while the publisher stays: the ladder stops.
  await tc.apply({ parent: null, drain: false, transcode: [] });
  await until(async () => stream(await o2.report(), 'show_small') === undefined, 10_000, 'the rendition to stop');
});

test('without nginx the node says what to install, and retries less and less often', async (t) => {
  const dir = tempDir(t);
  const logTimes: Array<{ msg: string; at: number }> = [];
  const o = backend(t, dir, { nodeId: 'o1', role: 'origin', address: '127.0.60.13', nginx: join(dir, 'no-such-nginx'), log: (msg) => logTimes.push({ msg, at: Date.now() }) });
  await o.start();
  const r = await o.report();
  t.false(r.ready);
  t.regex(r.problem ?? '', /no-such-nginx not found: install nginx, libnginx-mod-rtmp and ffmpeg/);
  const downs = await until(
    async () => {
      const at = logTimes.filter((x) => x.msg === 'nginx down').map((x) => x.at);
      return at.length >= 4 ? at : false;
    },
    10_000,
    'four attempts',
  );
  // Waits of 0.25, 0.5, then 1 s between attempts (each attempt itself takes a moment more).
  const gaps = downs.slice(1, 4).map((at, i) => at - downs[i]!);
  t.true(gaps[0]! >= 240 && gaps[1]! >= 490 && gaps[2]! >= 990, `gaps ${gaps.join(', ')} ms`);
});
