// Starts the heartbeat load generator (heartbeat-client.ts) as a separate process, so that its
// CPU is not the service's, and resolves with the figures it prints.
import { spawn } from 'node:child_process';
import { projectPath } from '../../src/paths.js';

export interface HeartbeatLoad {
  /** Static nodes e0…e{nodes-1}, each posting with its own token. */
  nodes: number;
  connections: number;
  seconds: number;
  /** Events in flight per connection (HTTP pipelining, or unanswered channel messages). */
  pipelining?: number;
  /** One POST per event (autocannon), or one node channel (WebSocket) per node. */
  transport?: 'http' | 'channel';
  /** Channels: events per second offered in all, whatever the answers do (0: closed loop). */
  rate?: number;
}

export interface HeartbeatResult {
  rps: number;
  p99: number;
  errors: number;
  non2xx: number;
}

export interface RunningLoad {
  /** Resolves when the load starts (its channels are open). */
  ready: Promise<void>;
  result: Promise<HeartbeatResult>;
}

export function heartbeatLoad(url: string, o: HeartbeatLoad): RunningLoad {
  let started: () => void = () => {};
  const ready = new Promise<void>((resolve) => (started = resolve));
  const result = new Promise<HeartbeatResult>((resolve, reject) => {
    const args = [url, o.nodes, o.connections, o.seconds, o.pipelining ?? 1, o.transport ?? 'http', o.rate ?? 0].map(String);
    const child = spawn(process.execPath, [projectPath('dist', 'bench', 'lib', 'heartbeat-client.js'), ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      if (out.includes('"ready"')) started();
    });
    child.once('exit', (code) => {
      started();
      if (code !== 0) return reject(new Error(`heartbeat load exited with ${code}`));
      resolve(JSON.parse(out.trim().split('\n').at(-1)!) as HeartbeatResult);
    });
  });
  return { ready, result };
}
