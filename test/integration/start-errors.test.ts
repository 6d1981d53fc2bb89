// Settings that cannot work on this machine stop the start with the setting named, the value and
// what was expected, and exit code 2, as invalid config does: no stack trace for an operator to read.
import { execFile } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import test from 'ava';
import { projectPath } from '../../src/paths.js';
import { tempDir } from '../helpers/service.js';

function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const dataDir = tempDir('switchyard-start-');
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [projectPath('dist', 'src', 'main.js')],
      { env: { ...process.env, SWITCHYARD_DATA_DIR: dataDir, SWITCHYARD_ADMIN_PASSWORD: 'correct-horse-battery', SWITCHYARD_LOG_LEVEL: 'silent', ...env }, timeout: 30_000 },
      (err, _stdout, stderr) => {
        rmSync(dataDir, { recursive: true, force: true });
        resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr });
      },
    );
  });
}

const noStack = (stderr: string) => !/\n\s+at /.test(stderr);

test('a GeoIP database that cannot be read', async (t) => {
  const r = await start({ SWITCHYARD_GEOIP_DB: '/nonexistent/city.mmdb' });
  t.is(r.code, 2);
  t.regex(r.stderr, /geoip\.databases \(SWITCHYARD_GEOIP_DB\) = "\/nonexistent\/city\.mmdb": ENOENT.*expected readable MaxMind-format City databases/);
  t.true(noStack(r.stderr), r.stderr);
});

test('a port another process listens on', async (t) => {
  const other = createServer();
  await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', resolve));
  t.teardown(() => other.close());
  const port = (other.address() as AddressInfo).port;
  const r = await start({ SWITCHYARD_PORT: String(port), SWITCHYARD_HOST: '127.0.0.1' });
  t.is(r.code, 2);
  t.regex(r.stderr, new RegExp(`server\\.host = "127\\.0\\.0\\.1", server\\.port = ${port}: EADDRINUSE; .*expected a free port \\(SWITCHYARD_PORT, server\\.port\\)`));
  t.true(noStack(r.stderr), r.stderr);
});

test('an address this machine does not have', async (t) => {
  const r = await start({ SWITCHYARD_HOST: '192.0.2.123', SWITCHYARD_PORT: '0' });
  t.is(r.code, 2);
  t.regex(r.stderr, /server\.host = "192\.0\.2\.123", server\.port = 0: EADDRNOTAVAIL; .*expected one of its addresses/);
  t.true(noStack(r.stderr), r.stderr);
});
