// The `switchyard` CLI as its own program, for tests: each run with a home directory of its own (its
// token file goes there), its standard input given, its output and exit code kept.
import { spawn } from 'node:child_process';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../../src/paths.js';
import { ADMIN_PASSWORD, tempDir, type TestService } from './service.js';

export const CLI = projectPath('dist', 'src', 'cli', 'switchyard.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `switchyard ARGS` with its own config directory; `input` goes to its standard input. */
export function cli(home: string, args: string[], options: { input?: string; env?: Record<string, string> } = {}): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, ...args], {
      env: { PATH: process.env.PATH ?? '', HOME: home, XDG_CONFIG_HOME: join(home, 'config'), ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    proc.once('error', reject);
    proc.once('close', (code) => resolve({ code, stdout, stderr }));
    // A command that never reads its input (--help, a usage error) may be gone before it is written.
    proc.stdin.on('error', () => {});
    proc.stdin.end(options.input ?? '');
  });
}

/** A home directory, and the CLI logged in to `svc` from it. */
export async function loggedIn(t: { teardown(f: () => void): void; is(a: unknown, b: unknown, m?: string): void }, svc: TestService): Promise<string> {
  const home = tempDir('switchyard-cli-');
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const r = await cli(home, ['login', '--url', svc.url, '--password-stdin'], { input: `${ADMIN_PASSWORD}\n` });
  t.is(r.code, 0, r.stderr);
  return home;
}
