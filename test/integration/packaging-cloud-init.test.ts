// The cloud modules' user data (config/terraform/{aws,digitalocean}/cloud-config.tftpl) installs
// what a node needs on a plain image: the Debian packages, the agent from the operator's package
// URL, and the agent's systemd unit (config/systemd/), all as data (base64, argument lists).
// Rendered by the real Terraform CLI from each module's own user_data expression.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { findProgram } from '../../src/os/programs.js';
import { projectPath } from '../../src/paths.js';
import { SHIPPED_MODULES_DIR } from '../../src/platforms/terraform/modules.js';
import { tempDir } from '../helpers/service.js';

const binary = process.env.SWITCHYARD_TERRAFORM_BIN ?? findProgram('terraform') ?? findProgram('tofu');

interface CloudConfig {
  packages: string[];
  users: unknown[];
  write_files: Array<{ path: string; encoding: string; content: string; permissions: string; owner: string }>;
  runcmd: string[][];
}

/** Applies a root module whose one output is the module's user data for node n1 (an edge). */
async function render(module: string, dir: string, vars: Record<string, unknown>): Promise<{ ok: true; doc: CloudConfig; text: string } | { ok: false; text: string }> {
  const { parse } = await import('@cdktf/hcl2json');
  const moduleDir = join(SHIPPED_MODULES_DIR, module);
  const hcl = (await parse('main.tf', readFileSync(join(moduleDir, 'main.tf'), 'utf8'))) as {
    variable: Record<string, Array<Record<string, unknown>>>;
    resource: Record<string, Record<string, Array<{ user_data: string }>>>;
  };
  const resource = Object.values(hcl.resource)[0]!;
  // The module's own expression, for one node: its path and the for_each key made literal.
  const expression = Object.values(resource)[0]![0]!.user_data.replaceAll('${path.module}', moduleDir).replaceAll('each.key', '"n1"').replaceAll('each.value.role', '"edge"');
  const bare = (decl: Record<string, unknown>) => ({ ...decl, type: String(decl.type).replace(/^\$\{(.*)\}$/, '$1') });
  const variable = Object.fromEntries(['service_url', 'scope', 'agent_package_url', 'tokens'].map((n) => [n, bare(hcl.variable[n]![0]!)]));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'main.tf.json'), JSON.stringify({ variable, output: { user_data: { value: expression, sensitive: true } } }));
  writeFileSync(join(dir, 'terraform.tfvars.json'), JSON.stringify(vars));
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, TF_IN_AUTOMATION: '1', CHECKPOINT_DISABLE: '1' };
  execFileSync(binary!, ['init', '-input=false', '-no-color'], { cwd: dir, env, stdio: 'pipe' });
  const r = spawnSync(binary!, ['apply', '-auto-approve', '-input=false', '-no-color'], { cwd: dir, env, encoding: 'utf8' });
  if (r.status !== 0) return { ok: false, text: `${r.stdout}${r.stderr}` };
  const text = (JSON.parse(execFileSync(binary!, ['output', '-json'], { cwd: dir, env, encoding: 'utf8' })) as { user_data: { value: string } }).user_data.value;
  return { ok: true, text, doc: JSON.parse(text.slice('#cloud-config\n'.length)) as CloudConfig };
}

for (const module of ['aws', 'digitalocean']) {
  test(`${module}: the user data installs nginx-rtmp, ffmpeg, Node.js and the agent from the package URL, with the agent's unit, all as data`, async (t) => {
    if (!binary) throw new Error('terraform (or tofu) is not installed');
    const dir = tempDir('switchyard-cloud-init-');
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const url = 'https://releases.example.test/switchyard-0.1.0.tgz?sig=a&b=(c)';
    const token = `t'o"k$(touch ${dir}/pwned)\`x\`;e`;
    const r = await render(module, join(dir, 'ok'), { service_url: 'https://cp.example.test', scope: 'live', agent_package_url: url, tokens: { n1: token } });
    if (!r.ok) return t.fail(r.text);
    t.true(r.text.startsWith('#cloud-config\n'));
    t.deepEqual(r.doc.packages, ['nginx', 'libnginx-mod-rtmp', 'ffmpeg', 'nodejs', 'npm']);
    t.like(r.doc.users[1], { name: 'switchyard', system: true });
    const [envFile, unit] = r.doc.write_files;
    t.like(envFile, { path: '/etc/switchyard/agent.env', encoding: 'b64', permissions: '0600', owner: 'root:root' });
    t.is(
      Buffer.from(envFile!.content, 'base64').toString('utf8'),
      `SWITCHYARD_NODE_ID=n1\nSWITCHYARD_NODE_ROLE=edge\nSWITCHYARD_NODE_SCOPE=live\nSWITCHYARD_NODE_TOKEN=${token}\nSWITCHYARD_URL=https://cp.example.test\n`,
    );
    t.like(unit, { path: '/etc/systemd/system/switchyard-agent.service', encoding: 'b64', permissions: '0644' });
    // The module carries its own copy (Switchyard runs a copy of the module's directory): the repo's unit.
    t.is(Buffer.from(unit!.content, 'base64').toString('utf8'), readFileSync(projectPath('config', 'systemd', 'switchyard-agent.service'), 'utf8'), 'the unit in config/systemd');
    t.deepEqual(r.doc.runcmd, [
      ['systemctl', 'disable', '--now', 'nginx'],
      ['npm', 'install', '--global', '--omit=dev', '--no-audit', '--no-fund', url],
      ['systemctl', 'daemon-reload'],
      ['systemctl', 'enable', '--now', 'switchyard-agent'],
    ]);
    t.false(r.text.includes('touch'), 'the token is only in base64');

    const imageHasIt = await render(module, join(dir, 'null'), { service_url: 'https://cp.example.test', scope: 'live', agent_package_url: null, tokens: { n1: 't' } });
    if (!imageHasIt.ok) return t.fail(imageHasIt.text);
    t.false(
      imageHasIt.doc.runcmd.some((c) => c[0] === 'npm'),
      'no URL: the image holds the agent',
    );

    for (const [what, bad] of [
      ['not https', 'http://releases.example.test/a.tgz'],
      ['a local file', 'file:///etc/passwd'],
      ['a quote', "https://x.example.test/'$(id)'"],
      ['a registry name', 'switchyard@latest'],
    ] as const) {
      const refused = await render(module, join(dir, what.replace(/ /g, '-')), { service_url: 'https://cp.example.test', scope: 'live', agent_package_url: bad, tokens: { n1: 't' } });
      t.false(refused.ok, `${module}: ${what}`);
      t.regex(refused.text, /The agent package URL must be an https:\/\/ URL/, `${module}: ${what}`);
    }
    t.false(existsSync(join(dir, 'pwned')));
  });
}
