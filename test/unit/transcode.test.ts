import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import fc from 'fast-check';
import type { TranscodeJob } from '../../src/agent/backend.js';
import { jobFiles, jobProblem, ladderArgs, renderExecScript, renderJobScript, shellQuote, TRANSCODER_FLASHVER } from '../../src/agent/media/transcode.js';
import { until } from '../helpers/until.js';

const rendition = fc.record({
  name: fc.stringMatching(/^[A-Za-z0-9._~-]{1,20}$/),
  level: fc.integer({ min: 0, max: 20 }),
  videoBR: fc.integer({ min: 50_000, max: 10_000_000 }),
  videoWidth: fc.integer({ min: 16, max: 3840 }),
  videoHeight: fc.integer({ min: 16, max: 2160 }),
  videoFPS: fc.integer({ min: 1, max: 60 }),
  audioBR: fc.integer({ min: 16_000, max: 320_000 }),
});
const job: fc.Arbitrary<TranscodeJob> = fc.record({
  stream: fc.stringMatching(/^[A-Za-z0-9._~-]{1,20}$/),
  origin: fc.record({ nodeId: fc.constant('o1'), address: fc.constantFrom('127.0.0.2', '10.1.2.3'), port: fc.integer({ min: 1, max: 65535 }), protocol: fc.constant('rtmp') }),
  renditions: fc.uniqueArray(rendition, { minLength: 1, maxLength: 6, selector: (r) => r.name }),
});

test('one ffmpeg reads the stream back from the transcoder and pushes each rendition, by its own name, to the bound origin', (t) => {
  fc.assert(
    fc.property(job, (j) => {
      const args = ladderArgs({ job: j, scope: 'live', self: { address: '127.0.0.4', port: 1935 } });
      const at = (flag: string) => args.flatMap((a, i) => (a === flag ? [args[i + 1]!] : []));
      t.deepEqual(at('-i'), [`rtmp://127.0.0.4:1935/live/${j.stream}`]);
      t.deepEqual(at('-rtmp_flashver'), [TRANSCODER_FLASHVER], 'the stat page can tell it from viewers');
      const outputs = args.filter((a) => a.startsWith('rtmp://') && !a.startsWith('rtmp://127.0.0.4'));
      const ladder = [...j.renditions].sort((a, b) => a.level - b.level || a.name.localeCompare(b.name));
      t.deepEqual(
        outputs,
        ladder.map((r) => `rtmp://${j.origin.address}:${j.origin.port}/live/${r.name}`),
      );
      t.deepEqual(
        at('-b:v'),
        ladder.map((r) => String(r.videoBR)),
      );
      t.deepEqual(
        at('-b:a'),
        ladder.map((r) => String(r.audioBR)),
      );
      for (const vf of at('-vf')) {
        const [w, h] = vf.replace('scale=', '').split(':').map(Number);
        t.true(w! % 2 === 0 && h! % 2 === 0, `x264 needs even sizes: ${vf}`);
      }
      t.deepEqual(
        at('-g'),
        ladder.map((r) => String(r.videoFPS)),
        'a keyframe every second',
      );
      t.is(at('-f').length, ladder.length);
    }),
  );
});

test('a job that cannot run here says why', (t) => {
  const base: TranscodeJob = {
    stream: 's',
    origin: { nodeId: 'o1', address: '127.0.0.2', port: 1935, protocol: 'rtmp' },
    renditions: [{ name: 's_1', level: 1, videoBR: 1, videoWidth: 2, videoHeight: 2, videoFPS: 1, audioBR: 1 }],
  };
  t.is(jobProblem(base), null);
  t.regex(jobProblem({ ...base, origin: { ...base.origin, protocol: 'http' } }) ?? '', /not rtmp/);
  t.regex(jobProblem({ ...base, renditions: [] }) ?? '', /no renditions/);
});

test('shell quoting gives the shell back exactly the string', (t) => {
  fc.assert(
    fc.property(
      fc.string({ maxLength: 40 }).filter((s) => !s.includes('\0')),
      (s) => {
        const r = spawnSync('/bin/sh', ['-c', `printf %s ${shellQuote(s)}`], { encoding: 'utf8' });
        t.is(r.stdout, s);
      },
    ),
    { numRuns: 60 },
  );
});

test('the job script execs ffmpeg with the ladder and appends its errors to the log', (t) => {
  const j: TranscodeJob = {
    stream: "it's",
    origin: { nodeId: 'o1', address: '127.0.0.2', port: 1935, protocol: 'rtmp' },
    renditions: [{ name: 'a', level: 1, videoBR: 1000, videoWidth: 64, videoHeight: 64, videoFPS: 10, audioBR: 1000 }],
  };
  const dir = mkdtempSync(join(tmpdir(), 'sy-job-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // A stand-in ffmpeg that prints its arguments one per line.
  const fake = join(dir, 'ffmpeg');
  writeFileSync(fake, '#!/bin/sh\nfor a in "$@"; do echo "$a"; done\necho oops >&2\n', { mode: 0o755 });
  const log = join(dir, 'x.log');
  const script = renderJobScript({ job: j, scope: 'live', self: { address: '127.0.0.4', port: 1935 }, ffmpeg: fake, log });
  const r = spawnSync('/bin/sh', ['-c', script], { encoding: 'utf8' });
  t.deepEqual(r.stdout.trimEnd().split('\n'), ladderArgs({ job: j, scope: 'live', self: { address: '127.0.0.4', port: 1935 } }));
  t.is(readFileSync(log, 'utf8'), 'oops\n');
});

test('the exec script waits for its stream’s job, records its pid and becomes the job; odd names get nothing', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'sy-exec-'));
  const exec = join(dir, 'transcode.sh');
  writeFileSync(exec, renderExecScript(join(dir, 'jobs')));
  spawnSync('mkdir', [join(dir, 'jobs')]);
  const children: number[] = [];
  t.teardown(() => {
    for (const pid of children) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const run = (name: string) => {
    const child = spawn('/bin/sh', [exec, name], { stdio: 'ignore' });
    children.push(child.pid!);
    return child;
  };
  const files = jobFiles(join(dir, 'jobs'), 'cam1');
  const child = run('cam1');
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  // The job arrives after the publisher: the script is already waiting for it.
  writeFileSync(files.script, `echo "$$" > ${shellQuote(join(dir, 'ran'))}\n`);
  t.is(await exited, 0);
  t.is(readFileSync(join(dir, 'ran'), 'utf8').trim(), String(child.pid), 'the job runs in the process nginx started');
  t.is(readFileSync(files.pid, 'utf8').trim(), String(child.pid));

  const odd = run('a b;touch x');
  const oddExit = new Promise<number | null>((resolve) => odd.once('exit', resolve));
  await until(async () => readFileSync(`/proc/${odd.pid}/cmdline`, 'utf8').startsWith('sleep'), 5000, 'the odd name to be parked');
  t.false(existsSync(join(dir, 'x')));
  odd.kill('SIGTERM');
  t.not(await oddExit, 0);
});
