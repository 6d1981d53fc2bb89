// A second service on a data directory another one is using refuses to start with one line that
// says so, and exit code 2 (as any setting that cannot work here): no stack trace.
import { execFile } from 'node:child_process';
import test from 'ava';
import { projectPath } from '../../src/paths.js';
import { OwnService } from '../helpers/process.js';

test('a second service on the same data directory refuses with one clear line and exit code 2', async (t) => {
  const first = await OwnService.start(t, { server: { host: '127.0.0.1', port: 0 }, geoip: { enabled: false }, nodeGroups: [] });
  const second = await new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) =>
    execFile(
      process.execPath,
      [projectPath('dist', 'src', 'main.js')],
      { env: { PATH: process.env.PATH ?? '', ...first.env, SWITCHYARD_LOG_LEVEL: 'silent' }, timeout: 30_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
    ),
  );
  t.is(second.code, 2, second.stderr);
  const lines = second.stderr.trim().split('\n');
  t.is(lines.length, 1, second.stderr);
  t.regex(
    lines[0]!,
    new RegExp(`^switchyard: the data directory .*data is in use by another Switchyard \\(pid ${first.process.proc.pid}\\); stop that one first, or give this one its own \\(SWITCHYARD_DATA_DIR\\)$`),
  );
  t.is((await fetch(`${first.url}/as/v1/healthz`)).status, 200, 'the first goes on');
});
