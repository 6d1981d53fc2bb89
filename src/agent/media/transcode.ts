// A transcoder's ladder as ffmpeg runs it. Pure: text of the two scripts the agent writes.
//
// nginx-rtmp runs one `exec` per published stream (see nginx-config.ts): the exec script below,
// with the stream's name as $1. It waits for the stream's job script, which the agent writes from
// the heartbeat reply, and becomes its ffmpeg: one process reads the stream back from this node
// and pushes every rendition, under the rendition's own name, to the origin the control plane
// bound. nginx stops it when the publisher leaves; the agent stops it when the job changes, and
// nginx then starts the exec script again, which picks up the new job.
import { join } from 'node:path';
import type { TranscodeJob } from '../backend.js';

/** How the transcoder's own reading of a stream shows on its stat page (not a viewer). */
export const TRANSCODER_FLASHVER = 'switchyard/transcoder';

export interface LadderInput {
  job: TranscodeJob;
  scope: string;
  /** This transcoder's RTMP listener, where the stream is read back from. */
  self: { address: string; port: number };
  /** Admission (docs/security.md): what the ladder presents to read the stream back here (this node's own credential). */
  selfCredential?: string | null;
}

/** A URL's admission token as its query: nginx-rtmp hands the query of a stream name to on_publish and on_play. */
const withToken = (url: string, token: string | null | undefined) => (token ? `${url}?token=${encodeURIComponent(token)}` : url);

const urlHost = (address: string) => (address.includes(':') ? `[${address}]` : address);
const even = (n: number) => Math.max(2, n - (n % 2));

/** Why a job cannot run here, or null. */
export function jobProblem(job: TranscodeJob): string | null {
  if (job.origin.protocol !== 'rtmp') return `origin ${job.origin.nodeId} takes '${job.origin.protocol}', not rtmp`;
  if (job.renditions.length === 0) return 'the ladder has no renditions';
  return null;
}

/** ffmpeg's arguments (after the program name) for one job. */
export function ladderArgs({ job, scope, self, selfCredential }: LadderInput): string[] {
  const args = [
    '-nostdin',
    '-hide_banner',
    '-loglevel',
    'warning',
    // A stalled input ends ffmpeg (after about 4× this) instead of hanging on a dead publisher.
    '-rw_timeout',
    '5000000',
    '-rtmp_flashver',
    TRANSCODER_FLASHVER,
    '-i',
    withToken(`rtmp://${urlHost(self.address)}:${self.port}/${scope}/${job.stream}`, selfCredential),
  ];
  const ladder = [...job.renditions].sort((a, b) => a.level - b.level || a.name.localeCompare(b.name));
  for (const r of ladder) {
    const fps = Math.max(1, Math.round(r.videoFPS));
    args.push(
      '-map',
      '0:v:0',
      '-map',
      '0:a:0?',
      '-c:v',
      'libx264',
      '-preset',
      'veryfast',
      '-tune',
      'zerolatency',
      '-pix_fmt',
      'yuv420p',
      '-vf',
      `scale=${even(r.videoWidth)}:${even(r.videoHeight)}`,
      // A keyframe every second: a viewer joining a rendition waits at most that long.
      '-r',
      String(fps),
      '-g',
      String(fps),
      '-keyint_min',
      String(fps),
      '-sc_threshold',
      '0',
      '-b:v',
      String(r.videoBR),
      '-maxrate',
      String(r.videoBR),
      '-bufsize',
      String(2 * r.videoBR),
      '-c:a',
      'aac',
      '-b:a',
      String(r.audioBR),
      '-f',
      'flv',
      withToken(`rtmp://${urlHost(job.origin.address)}:${job.origin.port}/${scope}/${r.name}`, job.tokens?.[r.name]),
    );
  }
  return args;
}

export function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The job script for one stream: it becomes ffmpeg (same pid as the exec script that runs it). */
export function renderJobScript(input: LadderInput & { ffmpeg: string; log: string }): string {
  const { job } = input;
  return [
    `# ${job.stream}: ${job.renditions.map((r) => r.name).join(', ')} to origin ${job.origin.nodeId} (${job.origin.address}:${job.origin.port})`,
    `exec ${[input.ffmpeg, ...ladderArgs(input)].map(shellQuote).join(' ')} 2>>${shellQuote(input.log)}`,
    '',
  ].join('\n');
}

export const jobFiles = (dir: string, stream: string) => ({
  script: join(dir, `${stream}.sh`),
  pid: join(dir, `${stream}.pid`),
  log: join(dir, `${stream}.log`),
});

/** The script nginx-rtmp execs for every stream published to the transcoder ($1: the stream). */
export function renderExecScript(dir: string): string {
  const d = shellQuote(dir.endsWith('/') ? dir : `${dir}/`);
  return [
    '#!/bin/sh',
    '# Run by nginx-rtmp for each stream published here. Waits for the agent to write the',
    "# stream's job, then becomes its ffmpeg; the agent stops that pid when the job changes and",
    '# nginx runs this again. Names the control plane would refuse get nothing to run.',
    `case "$1" in ''|*[!A-Za-z0-9._~-]*) exec sleep infinity ;; esac`,
    `job=${d}"$1.sh"`,
    'while [ ! -f "$job" ]; do sleep 0.2; done',
    `echo $$ > ${d}"$1.pid"`,
    'exec /bin/sh "$job"',
    '',
  ].join('\n');
}
