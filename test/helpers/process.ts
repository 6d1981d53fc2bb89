// The service as a real child process (`node dist/src/main.js`), for tests that kill it.
import { spawn, type ChildProcess } from 'node:child_process';
import { projectPath } from '../../src/paths.js';

export interface ServiceProcess {
  proc: ChildProcess;
  url: string;
  output: string[];
  exited: Promise<number | null>;
}

export async function spawnService(env: Record<string, string>, timeoutMs = 20_000): Promise<ServiceProcess> {
  const proc = spawn(process.execPath, ['--enable-source-maps', projectPath('dist', 'src', 'main.js')], {
    env: { PATH: process.env.PATH ?? '', SWITCHYARD_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the service did not start within ${timeoutMs} ms:\n${output.slice(-20).join('\n')}`)), timeoutMs);
    let buffer = '';
    const onData = (chunk: Buffer) => {
      buffer += chunk.toString();
      let nl;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        output.push(line);
        try {
          const entry = JSON.parse(line) as { msg?: string; url?: string };
          if (entry.msg === 'listening' && entry.url) {
            clearTimeout(timer);
            resolve(entry.url);
          }
        } catch {
          /* not a log line */
        }
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the service exited (${code}) before listening:\n${output.slice(-20).join('\n')}`));
    });
  });
  return { proc, url, output, exited };
}
