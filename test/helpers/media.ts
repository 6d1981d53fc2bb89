// Real publishers and players for media tests: ffmpeg, each in its own process group, every one
// stopped at teardown (SIGTERM to the group, then SIGKILL), whatever the test's outcome.
import { spawn } from 'node:child_process';
import { accessSync, constants, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ExecutionContext } from 'ava';
import { findProgram } from '../../src/os/programs.js';

export const RTMP_MODULE = process.env.SWITCHYARD_NGINX_RTMP_MODULE || '/usr/lib/nginx/modules/ngx_rtmp_module.so';

/** The programs media tests need; a clear failure (not a skip) when they are missing. */
export function mediaTools(): { nginx: string; ffmpeg: string; ffprobe: string } {
  const nginx = findProgram('nginx');
  const ffmpeg = findProgram('ffmpeg');
  const ffprobe = findProgram('ffprobe');
  let module = true;
  try {
    accessSync(RTMP_MODULE, constants.R_OK);
  } catch {
    module = false;
  }
  if (!nginx || !ffmpeg || !ffprobe || !module) {
    throw new Error('media tests need nginx, libnginx-mod-rtmp and ffmpeg: apt-get install -y --no-install-recommends nginx libnginx-mod-rtmp ffmpeg (.ci/run does)');
  }
  return { nginx, ffmpeg, ffprobe };
}

export interface Running {
  pid: number;
  output: string[];
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  done: boolean;
  stop(): Promise<void>;
}

/** Processes of one test: each leads its own group; all are stopped at teardown. */
export class Processes {
  private readonly all: Running[] = [];

  constructor(t: ExecutionContext) {
    t.teardown(() => this.stopAll());
  }

  start(command: string, args: readonly string[], onOutput?: (chunk: string) => void): Running {
    const child = spawn(command, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    const output: string[] = [];
    const keep = (c: Buffer) => {
      onOutput?.(c.toString());
      output.push(c.toString());
      if (output.length > 200) output.splice(0, output.length - 200);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    const running: Running = {
      pid: child.pid!,
      output,
      done: false,
      exited: new Promise((resolve) =>
        child.once('exit', (code, signal) => {
          running.done = true;
          resolve({ code, signal });
        }),
      ),
      stop: async () => {
        if (!running.done) {
          signalGroup(running.pid, 'SIGTERM');
          await Promise.race([running.exited, sleep(300)]);
        }
        if (!running.done) {
          signalGroup(running.pid, 'SIGKILL');
          await Promise.race([running.exited, sleep(3000)]);
        }
        signalGroup(running.pid, 'SIGKILL');
      },
    };
    child.once('error', (err) => output.push(String(err)));
    this.all.push(running);
    return running;
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.all.map((r) => r.stop()));
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    /* gone */
  }
}

/** A synthetic live stream (test pattern and a tone) with a short GOP, published until stopped. */
export function publish(p: Processes, ffmpeg: string, url: string, size = '426x240'): Running {
  return p.start(ffmpeg, [
    '-nostdin',
    '-hide_banner',
    '-loglevel',
    'error',
    '-re',
    '-f',
    'lavfi',
    '-i',
    `testsrc=size=${size}:rate=25`,
    '-f',
    'lavfi',
    '-i',
    'sine=frequency=440',
    '-c:v',
    'libx264',
    '-preset',
    'ultrafast',
    '-tune',
    'zerolatency',
    '-g',
    '25',
    '-pix_fmt',
    'yuv420p',
    '-c:a',
    'aac',
    '-b:a',
    '64k',
    '-f',
    'flv',
    url,
  ]);
}

export interface Played {
  /** Video frames decoded. */
  frames: number;
  /** From the player's start to its first decoded frame. */
  firstFrameMs: number | null;
  width: number | null;
  height: number | null;
  output: string;
}

/**
 * Plays `seconds` of a stream (or until `{ frames }` video frames) and counts the video frames
 * ffmpeg decoded (one framemd5 line each). -rw_timeout makes a player of a stream that never comes
 * give up; the whole run is bounded by `timeoutMs` and its process group killed past it.
 */
export async function play(p: Processes, tools: { ffmpeg: string }, url: string, limit: number | { frames: number }, timeoutMs = 20_000): Promise<Played> {
  const startedAt = Date.now();
  let firstFrameMs: number | null = null;
  const until = typeof limit === 'number' ? ['-t', String(limit)] : ['-frames:v', String(limit.frames)];
  const r = p.start(tools.ffmpeg, ['-nostdin', '-hide_banner', '-loglevel', 'error', '-rw_timeout', '3000000', '-i', url, ...until, '-map', '0:v:0', '-f', 'framemd5', '-'], (chunk) => {
    if (firstFrameMs === null && /(^|\n)0,/.test(chunk)) firstFrameMs = Date.now() - startedAt;
  });
  const timer = setTimeout(() => void r.stop(), timeoutMs);
  await r.exited;
  clearTimeout(timer);
  const output = r.output.join('');
  const frames = output.split('\n').filter((l) => /^0,/.test(l)).length;
  const dims = /#dimensions 0: (\d+)x(\d+)/.exec(output);
  return { frames, firstFrameMs, width: dims ? Number(dims[1]) : null, height: dims ? Number(dims[2]) : null, output: output.slice(-2000) };
}

/**
 * Plays until `frames` video frames came, at most `attempts` times. By frame count, not by time: a
 * player joins mid-GOP, so the frames in its first N seconds depend on where it joined (25 to 35 in
 * 2 s of a 25 fps stream). Another attempt covers a playback that ends early (one through origin →
 * relay → edge ended after 9 frames on a loaded machine, cause not found); what is asserted is that
 * the chain carries the stream, and a broken chain fails every attempt. Each short playback is
 * logged with its output.
 */
export async function playFrames(p: Processes, tools: { ffmpeg: string }, url: string, frames: number, log: (line: string) => void, attempts = 3, timeoutMs?: number): Promise<Played> {
  let played!: Played;
  for (let i = 1; i <= attempts; i++) {
    played = await play(p, tools, url, { frames }, timeoutMs);
    if (played.frames >= frames) return played;
    log(`playback ${i} of ${url}: ${played.frames} frames (first after ${played.firstFrameMs} ms)\n${played.output.slice(-600)}`);
  }
  return played;
}

/** Processes whose command line names the data directory's nodes (agents, nginx, ffmpeg). */
export function leftovers(dataDir: string): string[] {
  const out: string[] = [];
  for (const p of readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    try {
      const stat = readFileSync(`/proc/${p}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z') continue;
      const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
      const env = readFileSync(`/proc/${p}/environ`, 'utf8');
      if (cmd.includes(`${dataDir}/nodes/`) || env.includes(`SWITCHYARD_NODE_DIR=${dataDir}/nodes/`)) out.push(`${p} ${cmd.replace(/\0/g, ' ')}`);
    } catch {
      /* gone */
    }
  }
  return out;
}

/** On failure, what the service, each agent and each nginx said. */
export function report(t: { log(...v: unknown[]): void }, dataDir: string, output: readonly string[]): void {
  t.log(`service output (last 30 lines):\n${output.slice(-30).join('\n')}`);
  try {
    for (const id of readdirSync(join(dataDir, 'nodes'))) {
      for (const f of ['agent.log', 'error.log']) {
        try {
          t.log(
            `${id}/${f}:\n${readFileSync(join(dataDir, 'nodes', id, f), 'utf8')
              .split('\n')
              .slice(-12)
              .join('\n')}`,
          );
        } catch {
          /* not there */
        }
      }
    }
  } catch {
    /* no nodes */
  }
}
