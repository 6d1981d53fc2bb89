// Logs for people at a terminal, JSON for machines (docs/observability.md): the service as its
// own program, its stdout a pipe (as under systemd, in a container, in these tests) or a real
// terminal (a pseudo-terminal from util-linux's `script`), and SWITCHYARD_LOG_FORMAT choosing.
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { prettyLogs } from '../../src/observability/log.js';
import { projectPath } from '../../src/paths.js';
import { tempDir } from '../helpers/fixtures.js';

/** Runs the service until it says it listens (or 30 s pass), then stops it; answers what it wrote. */
function firstLines(format: string | undefined, terminal: boolean): Promise<string> {
  const dir = tempDir('switchyard-logs-');
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ server: { host: '127.0.0.1', port: 0 }, geoip: { enabled: false }, nodeGroups: [] }));
  const env = {
    PATH: process.env.PATH ?? '',
    SWITCHYARD_CONFIG: config,
    SWITCHYARD_DATA_DIR: join(dir, 'data'),
    SWITCHYARD_ADMIN_PASSWORD: 'log-format-password',
    ...(format ? { SWITCHYARD_LOG_FORMAT: format } : {}),
  };
  const command = [process.execPath, projectPath('dist', 'src', 'main.js')];
  const child = terminal
    ? spawn('script', ['-qfec', command.join(' '), '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] })
    : spawn(command[0]!, command.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve) => {
    let out = '';
    const done = () => {
      clearTimeout(timer);
      child.kill('SIGTERM');
      resolve(out);
    };
    const timer = setTimeout(done, 30_000);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      if (/listening/.test(out)) done();
    });
  });
}

const isJsonLines = (text: string) =>
  text
    .split(/\r?\n/)
    .filter((l) => l.trim())
    .every((l) => {
      try {
        return typeof JSON.parse(l) === 'object';
      } catch {
        return false;
      }
    });

test('auto: pretty lines at a terminal, JSON into a pipe; SWITCHYARD_LOG_FORMAT overrides either way', async (t) => {
  t.true(prettyLogs('auto', true));
  t.false(prettyLogs('auto', false));
  t.true(prettyLogs('pretty', false));
  t.false(prettyLogs('json', true));

  const piped = await firstLines(undefined, false);
  t.regex(piped, /"msg":"listening"/);
  t.true(isJsonLines(piped), piped);

  const terminal = await firstLines(undefined, true);
  t.regex(terminal, /listening/);
  t.false(isJsonLines(terminal), terminal);
  t.regex(terminal, /\d\d:\d\d:\d\d\.\d{3}/, 'a time people read');

  t.true(isJsonLines(await firstLines('json', true)), 'json at a terminal');
  t.false(isJsonLines(await firstLines('pretty', false)), 'pretty into a pipe');
});
