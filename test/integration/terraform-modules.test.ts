// The catalog of installed Terraform modules (src/platforms/terraform/modules.ts), read with the
// real HCL parser from real directories, and what the real CLI makes of what it says: values the
// type check accepts are values Terraform accepts; the cloud modules' user data carries values as
// data; a module changed after it was read is not run.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import fc from 'fast-check';
import { parseConfig } from '../../src/config/load.js';
import { normalizeNodeGroup } from '../../src/config/node-group.js';
import { findProgram } from '../../src/os/programs.js';
import { loadTerraformModules, SHIPPED_MODULES_DIR } from '../../src/platforms/terraform/modules.js';
import { pinnedInputs } from '../../src/platforms/terraform/platform.js';
import { moduleNamed } from '../../src/policy/terraform/requests.js';
import { TerraformRunner } from '../../src/platforms/terraform/runner.js';
import { typeToString, type TypeExpr } from '../../src/policy/terraform/type-constraint.js';
import { projectPath } from '../../src/paths.js';
import { staticGroup, tempDir } from '../helpers/service.js';
import { typeArb, valueArb } from '../helpers/terraform-types.js';

const operator = (o: object = {}) => ({ binary: 'terraform', env: [], providerSettings: ['region'], modules: {}, ...o });
const binary = process.env.SWITCHYARD_TERRAFORM_BIN ?? findProgram('terraform') ?? findProgram('tofu');
const real = binary ? test : test.skip;

test('the shipped modules: their variables, and the provider configured per region', async (t) => {
  const { catalog, problems, warnings } = await loadTerraformModules(operator());
  t.deepEqual(problems, []);
  t.deepEqual(warnings, []);
  t.deepEqual(
    catalog.modules.map((m) => m.name),
    ['aws', 'digitalocean', 'local'],
  );
  const local = moduleNamed(catalog, 'local')!;
  t.deepEqual(
    local.variables.map((v) => v.name),
    ['agent', 'group', 'network', 'node_binary', 'nodes', 'port', 'region', 'scope', 'service_url', 'state_dir', 'tokens'],
  );
  t.is(local.provider, undefined);
  t.deepEqual(moduleNamed(catalog, 'aws')!.provider, { name: 'aws', source: 'hashicorp/aws', version: '>= 5.0' });
  t.deepEqual(moduleNamed(catalog, 'digitalocean')!.provider, { name: 'digitalocean', source: 'digitalocean/digitalocean', version: '>= 2.30' });
  t.deepEqual(
    moduleNamed(catalog, 'aws')!
      .variables.filter((v) => v.required)
      .map((v) => v.name),
    ['group', 'image_id', 'nodes', 'region', 'security_group_ids', 'service_url', 'subnet_ids', 'tokens'],
  );
});

test("the operator's modules directory: modules by name, the operator's pins and provider choice checked, broken and misnamed ones set aside", async (t) => {
  const dir = tempDir('switchyard-tf-modules-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const contract = 'variable "nodes" {}\nvariable "tokens" {}\nvariable "service_url" {}\nvariable "group" {}\nvariable "region" {}\noutput "nodes" {\n  value = {}\n}\n';
  const module = (name: string, text: string) => {
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, 'main.tf'), text);
  };
  module(
    'mine',
    `${contract}variable "bootstrap" {\n  type = string\n}\nvariable "size" {\n  type    = number\n  default = 1\n}\nterraform {\n  required_providers {\n    aws    = { source = "hashicorp/aws" }\n    random = { source = "hashicorp/random" }\n  }\n}\n`,
  );
  mkdirSync(join(dir, 'json'));
  writeFileSync(join(dir, 'json', 'main.tf.json'), JSON.stringify({ variable: { nodes: {}, tokens: {}, service_url: {}, group: {}, region: {}, flavour: { type: 'list(string)' } } }));
  module('broken', 'variable "x" {\n');
  module('.hidden', contract);
  module('local', contract);

  const loaded = await loadTerraformModules(operator({ modulesDir: dir, modules: { mine: { provider: 'aws', variables: { bootstrap: '/opt/boot.sh', size: 'big' } }, nosuch: { variables: {} } } }));
  t.deepEqual(
    loaded.catalog.modules.map((m) => `${m.name}${m.shipped ? ' (shipped)' : ''}`),
    ['aws (shipped)', 'digitalocean (shipped)', 'local (shipped)', 'broken', 'json', 'mine'],
  );
  t.deepEqual(loaded.problems, [
    `terraform.modulesDir: module 'local' (${join(dir, 'local')}) has the name of a module that ships with Switchyard; give it another name`,
    'terraform.modules.mine.variables.size: must be a number',
    'terraform.modules.nosuch: names no installed module; the modules are: aws, digitalocean, local, broken, json, mine',
  ]);
  t.true(loaded.warnings.some((w) => w.includes('.hidden') && /not a module name/.test(w)));
  t.regex(moduleNamed(loaded.catalog, 'broken')!.problem ?? '', /main\.tf:.*Unclosed configuration block/);
  t.deepEqual(moduleNamed(loaded.catalog, 'mine')!.provider, { name: 'aws', source: 'hashicorp/aws' }, "the operator chose one of the module's providers");
  t.deepEqual(moduleNamed(loaded.catalog, 'json')!.variables.find((v) => v.name === 'flavour')!.type, { kind: 'list', element: { kind: 'string' } });
  const without = await loadTerraformModules(operator({ modulesDir: dir }));
  t.is(moduleNamed(without.catalog, 'mine')!.provider, undefined, 'several providers and no choice: none is configured per region');
  const missing = await loadTerraformModules(operator({ modulesDir: join(dir, 'nothing-here') }));
  t.regex(missing.problems[0]!, /terraform\.modulesDir = .*: is not a directory this service can read/);
});

test('a module changed after it was read is not run: the runner refuses it and starts nothing', async (t) => {
  const dir = tempDir('switchyard-tf-changed-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const modulesDir = join(dir, 'modules');
  mkdirSync(modulesDir);
  cpSync(join(SHIPPED_MODULES_DIR, 'local'), join(modulesDir, 'mylocal'), { recursive: true });
  // Not the shipped one: its paths are the operator's to pin.
  const { catalog } = await loadTerraformModules(operator({ modulesDir, modules: { mylocal: { variables: { agent: '/opt/agent.js', state_dir: dir } } } }));
  const group = parseConfig({ nodeGroups: [{ ...staticGroup({ regions: ['r1'] }), platform: { type: 'terraform', terraform: { module: 'mylocal', batchWindow: 0, retries: 0 } } }] }, 'test')
    .nodeGroups[0]!;
  writeFileSync(join(modulesDir, 'mylocal', 'main.tf'), `${readFileSync(join(modulesDir, 'mylocal', 'main.tf'), 'utf8')}\nvariable "extra" {}\n`);
  const runner = new TerraformRunner({
    dir: join(dir, 'work'),
    group,
    modules: catalog,
    pinned: (m) => pinnedInputs(m, dir),
    binary: projectPath('test', 'fake-terraform', 'terraform'),
    passEnv: [],
    serviceUrl: 'http://127.0.0.1:5080',
    nodeToken: () => 'token',
    onProgress: () => {},
  });
  const err = await t.throwsAsync(runner.ensure({ id: 'a', role: 'origin', region: 'r1' }));
  t.regex(err!.message, /module 'mylocal' changed on disk since the service read it at start: restart the service to use it/);
  t.false(existsSync(join(dir, 'work', 'fake-terraform.log')), 'no Terraform process started');
});

/** A scratch root of variables only, planned by the real CLI (no provider, nothing to download). */
function plan(dir: string, root: object, vars: object, extra: string[] = []): { ok: boolean; text: string; outputs?: Record<string, { value: unknown }> } {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'main.tf.json'), JSON.stringify(root));
  writeFileSync(join(dir, 'terraform.tfvars.json'), JSON.stringify(vars));
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, TF_IN_AUTOMATION: '1', CHECKPOINT_DISABLE: '1' };
  execFileSync(binary!, ['init', '-input=false', '-no-color'], { cwd: dir, env, stdio: 'pipe' });
  const r = spawnSync(binary!, ['apply', '-auto-approve', '-input=false', '-no-color', ...extra], { cwd: dir, env, encoding: 'utf8' });
  if (r.status !== 0) return { ok: false, text: `${r.stdout}${r.stderr}` };
  const outputs = JSON.parse(execFileSync(binary!, ['output', '-json'], { cwd: dir, env, encoding: 'utf8' })) as Record<string, { value: unknown }>;
  return { ok: true, text: r.stdout, outputs };
}

const withoutAny = (t: TypeExpr): boolean => {
  switch (t.kind) {
    case 'any':
      return false;
    case 'list':
    case 'set':
    case 'map':
      return withoutAny(t.element);
    case 'tuple':
      return t.elements.every(withoutAny);
    case 'object':
      return t.attributes.every((a) => withoutAny(a.type));
    default:
      return true;
  }
};

real('what the type check accepts, the real CLI accepts: random types and values that fit them', (t) => {
  const dir = tempDir('switchyard-tf-types-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // `any` inside a collection is left out: Terraform also wants its elements of one type, which
  // the check leaves to it (the apply says so).
  const cases = fc.sample(
    typeArb.filter(withoutAny).chain((type) => fc.tuple(fc.constant(type), valueArb(type))),
    { numRuns: 40, seed: 4242 },
  );
  const root = { variable: Object.fromEntries(cases.map(([type], i) => [`v${i}`, { type: typeToString(type) }])) };
  const vars = Object.fromEntries(cases.map(([, value], i) => [`v${i}`, value]));
  const r = plan(dir, root, vars);
  t.true(r.ok, r.text);
});

real("the cloud modules' user data carries every value as data, and their own checks refuse what an environment file cannot hold", async (t) => {
  const dir = tempDir('switchyard-tf-userdata-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { parse } = await import('@cdktf/hcl2json');
  for (const module of ['aws', 'digitalocean']) {
    // The module's own declarations of the values its user data holds, validation blocks included.
    const declared = (await parse('main.tf', readFileSync(join(SHIPPED_MODULES_DIR, module, 'main.tf'), 'utf8'))) as { variable: Record<string, unknown[]> };
    // In JSON syntax a type is written bare: hcl2json writes it as an expression, "${string}".
    const bare = (decl: unknown) => ({ ...(decl as object), type: (decl as { type: string }).type.replace(/^\$\{(.*)\}$/, '$1') });
    const root = {
      variable: { service_url: bare(declared.variable.service_url![0]), scope: bare(declared.variable.scope![0]), token: { type: 'string' } },
      output: {
        user_data: {
          value: `\${templatefile(${JSON.stringify(join(SHIPPED_MODULES_DIR, module, 'cloud-config.tftpl'))}, { environment = { SWITCHYARD_URL = var.service_url, SWITCHYARD_NODE_SCOPE = var.scope, SWITCHYARD_NODE_TOKEN = var.token }, agent_package = null, agent_unit = "" })}`,
        },
      },
    };
    const token = `a'b"c$(touch ${dir}/x)\`d\`;e\\f%{g}\${h}`;
    const ok = plan(join(dir, module, 'ok'), root, { service_url: 'https://cp.example.test/x?y=1', scope: 'live', token });
    t.true(ok.ok, ok.text);
    const text = ok.outputs!.user_data!.value as string;
    t.true(text.startsWith('#cloud-config\n'), text);
    const doc = JSON.parse(text.slice('#cloud-config\n'.length)) as { write_files: Array<{ path: string; encoding: string; content: string; permissions: string }>; runcmd: string[][] };
    t.deepEqual(doc.runcmd.at(-1), ['systemctl', 'enable', '--now', 'switchyard-agent'], 'argument lists: no shell');
    t.like(doc.write_files[0], { path: '/etc/switchyard/agent.env', encoding: 'b64', permissions: '0600' });
    t.is(
      Buffer.from(doc.write_files[0]!.content, 'base64').toString('utf8'),
      `SWITCHYARD_NODE_SCOPE=live\nSWITCHYARD_NODE_TOKEN=${token}\nSWITCHYARD_URL=https://cp.example.test/x?y=1\n`,
      'every value arrives unchanged',
    );
    t.false(text.includes('touch'), 'no value is in the document as text');
    for (const [what, vars] of [
      ['a scope with a new line', { service_url: 'https://cp.example.test', scope: 'live\nLD_PRELOAD=/tmp/x.so', token: 't' }],
      ['a service URL with a quote', { service_url: "https://cp.example.test/'$(id)'", scope: 'live', token: 't' }],
    ] as const) {
      const refused = plan(join(dir, module, what.replace(/ /g, '-')), root, vars);
      t.false(refused.ok, `${module}: ${what}`);
      t.regex(refused.text, /Invalid value for variable/, `${module}: ${what}`);
    }
  }
  t.false(existsSync(join(dir, 'x')));
});

real('values reach a module as data through the real CLI: template syntax in strings and map keys arrives unchanged', async (t) => {
  const dir = tempDir('switchyard-tf-data-');
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const modulesDir = join(dir, 'modules');
  mkdirSync(join(modulesDir, 'echo'), { recursive: true });
  writeFileSync(
    join(modulesDir, 'echo', 'main.tf'),
    [
      'variable "nodes" {\n  type = map(object({ role = string, region = string }))\n}',
      'variable "tokens" {\n  type      = map(string)\n  sensitive = true\n}',
      'variable "service_url" {\n  type = string\n}\nvariable "group" {\n  type = string\n}\nvariable "region" {\n  type = string\n}',
      'variable "tags" {\n  type = map(string)\n}\nvariable "note" {\n  type = string\n}',
      'output "nodes" {\n  value = { for id, n in var.nodes : id => { public = jsonencode({ tags = var.tags, note = var.note }), private = "10.0.0.1" } }\n}',
    ].join('\n'),
  );
  const { catalog } = await loadTerraformModules(operator({ modulesDir }));
  const tags = { '${file("/etc/hostname")}': '%{ if true }x%{ endif }', plain: '$${HOME} \' " `id` $(id)' };
  const note = '${upper("a")}';
  const result = normalizeNodeGroup(
    { ...staticGroup({ name: 'echo', regions: ['r1'] }), platform: { type: 'terraform', terraform: { module: 'echo', batchWindow: 0, retries: 0, variables: { tags, note } } } },
    catalog,
  );
  if ('errors' in result) return t.fail(JSON.stringify(result.errors));
  const runner = new TerraformRunner({
    dir: join(dir, 'work'),
    group: result.group,
    modules: catalog,
    pinned: (m) => pinnedInputs(m, dir),
    binary: binary!,
    passEnv: [],
    serviceUrl: 'http://127.0.0.1:5080',
    nodeToken: () => 'token',
    onProgress: () => {},
  });
  const address = await runner.ensure({ id: 'n1', role: 'origin', region: 'r1' });
  t.deepEqual(JSON.parse(address.public!), { tags, note }, 'Terraform evaluated nothing in them');
  t.false(readFileSync(join(dir, 'work', 'main.tf.json'), 'utf8').includes('hostname'), 'no value is in the configuration');
});

real('the shipped modules are formatted as terraform fmt writes them', (t) => {
  const r = spawnSync(binary!, ['fmt', '-check', '-recursive', '-no-color', SHIPPED_MODULES_DIR], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: process.env.HOME } });
  t.is(r.status, 0, `${r.stdout}${r.stderr}`);
});
