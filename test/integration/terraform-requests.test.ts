// What a node group may ask of the Terraform platform, through real HTTP against a started service
// (README.md, "The Terraform platform" and "Security"): an admin's request chooses no executable,
// path, provider or shell text. Each hostile body is refused with a 400 that names the field, and
// nothing runs: no Terraform process starts (the operator's CLI here is a wrapper that logs every
// start before handing over to the real one), no working directory appears, no marker file.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import test from 'ava';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { openStore } from '../../src/store/store.js';
import { findProgram } from '../../src/os/programs.js';
import { projectPath } from '../../src/paths.js';
import { isProblem } from '../helpers/assert.js';
import { staticGroup, startTestService, tempDir, type TestService } from '../helpers/service.js';

const work = tempDir('switchyard-tf-requests-');
/** Whatever a payload would make, it makes here. */
const marks = join(work, 'marks');
mkdirSync(marks);
const mark = (name: string) => join(marks, name);

// The operator's CLI: logs that it started, then runs the real Terraform where there is one (so
// that a payload that got through would really run), else the fake.
const cliLog = join(work, 'cli-started.log');
const real = process.env.SWITCHYARD_TERRAFORM_BIN ?? findProgram('terraform') ?? findProgram('tofu') ?? projectPath('test', 'fake-terraform', 'terraform');
const cli = join(work, 'terraform');
writeFileSync(cli, `#!/bin/sh\necho "$PWD $*" >> '${cliLog}'\nexec '${real}' "$@"\n`);
chmodSync(cli, 0o755);

// A module and a CLI of an attacker's, on this machine: a request must not be able to name them.
const evilModule = join(work, 'evil-module');
mkdirSync(evilModule);
writeFileSync(
  join(evilModule, 'main.tf'),
  `variable "nodes" {}\nvariable "tokens" {}\nvariable "service_url" {}\nvariable "group" {}\nvariable "region" {}\nresource "terraform_data" "x" {\n  provisioner "local-exec" {\n    command = "touch '${mark('module')}'"\n  }\n}\noutput "nodes" {\n  value = {}\n}\n`,
);
const evilCli = join(work, 'evil-cli');
writeFileSync(evilCli, `#!/bin/sh\ntouch '${mark('binary')}'\n`);
chmodSync(evilCli, 0o755);

// The operator's CLI, by the environment (as an operator would set it).
process.env.SWITCHYARD_TERRAFORM_BIN = cli;
const env = { SWITCHYARD_TERRAFORM_BIN: cli };

const group = (name: string, terraform: object) => ({
  ...staticGroup({ name, regions: ['r1'], rules: [{ region: 'r1', role: 'origin', min: 1, max: 1, limit: 10 }] }),
  platform: { type: 'terraform', terraform: { module: 'local', batchWindow: 50, retries: 0, ...terraform } },
});

/** Each: the node group's terraform settings, and the field the 400 must name. */
const hostile: Array<[string, object, RegExp, RegExp?]> = [
  ["the audit's payload in node_binary", { variables: { node_binary: `x'; id > ${mark('audit')}; '` } }, /^body\.platform\.terraform\.variables\.node_binary$/, /Switchyard sets it/],
  ['backticks in agent', { variables: { agent: `\`touch ${mark('backticks')}\`` } }, /^body\.platform\.terraform\.variables\.agent$/],
  ['$() in state_dir', { variables: { state_dir: `$(touch ${mark('dollar')})` } }, /^body\.platform\.terraform\.variables\.state_dir$/],
  ['newlines in node_binary', { variables: { node_binary: `node\ntouch ${mark('newline')}\n` } }, /^body\.platform\.terraform\.variables\.node_binary$/],
  ['; in a region variable', { regionVariables: { r1: { node_binary: `node; touch ${mark('semicolon')}` } } }, /^body\.platform\.terraform\.regionVariables\.r1\.node_binary$/],
  ['an absolute module path', { module: evilModule }, /^body\.platform\.terraform\.module$/, /is a path/],
  ['a relative module path', { module: `./${relative(process.cwd(), evilModule)}` }, /^body\.platform\.terraform\.module$/, /is a path/],
  ['a parent module path', { module: '../../../tmp' }, /^body\.platform\.terraform\.module$/, /is a path/],
  ['an unknown module', { module: 'nosuch' }, /^body\.platform\.terraform\.module$/, /the modules are: aws, digitalocean, local/],
  ['a binary', { binary: evilCli }, /^body\.platform\.terraform\.binary$/, /terraform\.binary .*SWITCHYARD_TERRAFORM_BIN/],
  ['a provider source', { provider: 'evil', providerSource: 'evil/evil', providerSettings: { r1: { region: 'x' } } }, /^body\.platform\.terraform\.provider(Source)?$/, /module's own/],
  [
    'an unknown variable',
    { variables: { command: `touch ${mark('unknown')}` } },
    /^body\.platform\.terraform\.variables\.command$/,
    /is not a variable of module 'local'; it declares: network, port, scope/,
  ],
  ['a wrongly typed variable', { variables: { port: `1935; touch ${mark('typed')}` } }, /^body\.platform\.terraform\.variables\.port$/, /must be a number/],
  ['a wrongly typed region variable', { regionVariables: { r1: { scope: ['live'] } } }, /^body\.platform\.terraform\.regionVariables\.r1\.scope$/, /must be a string/],
  ['a reserved input', { variables: { service_url: 'http://attacker.example' } }, /^body\.platform\.terraform\.variables\.service_url$/, /set by Switchyard/],
  ['reserved tokens', { variables: { tokens: { x: 'y' } } }, /^body\.platform\.terraform\.variables\.tokens$/, /set by Switchyard/],
  ['provider settings for a module without a provider', { providerSettings: { r1: { region: 'x' } } }, /^body\.platform\.terraform\.providerSettings\.r1$/, /no provider configured per region/],
  [
    'a provider setting the operator does not allow',
    { module: 'aws', variables: { image_id: 'ami-1', subnet_ids: ['s'], security_group_ids: ['g'] }, providerSettings: { r1: { region: 'us-east-1', shared_credentials_files: ['/etc/shadow'] } } },
    /^body\.platform\.terraform\.providerSettings\.r1\.shared_credentials_files$/,
    /operator allows: region/,
  ],
  [
    'a provider setting that is not a scalar',
    { module: 'aws', variables: { image_id: 'ami-1', subnet_ids: ['s'], security_group_ids: ['g'] }, providerSettings: { r1: { region: { endpoint: 'http://attacker.example' } } } },
    /^body\.platform\.terraform\.providerSettings\.r1\.region$/,
    /string, a number or a boolean/,
  ],
  [
    'a provider setting that would make a host name elsewhere',
    { module: 'aws', variables: { image_id: 'ami-1', subnet_ids: ['s'], security_group_ids: ['g'] }, providerSettings: { r1: { region: 'attacker.example/?' } } },
    /^body\.platform\.terraform\.providerSettings\.r1\.region$/,
    /host names/,
  ],
  ['a service URL with shell text', { serviceUrl: `http://x/'$(touch ${mark('url')})'` }, /^body\.platform\.terraform\.serviceUrl$/],
];

let svc: TestService;
test.before(async () => {
  svc = await startTestService({ env });
});
test.after.always(async () => {
  await svc?.close();
  rmSync(work, { recursive: true, force: true });
});

for (const [what, terraform, path, message] of hostile) {
  test.serial(`POST refuses ${what} with a 400 naming the field, and runs nothing`, async (t) => {
    const name = `h${hostile.findIndex((h) => h[0] === what)}`;
    const p = isProblem(t, await svc.send('POST', '/as/v1/nodegroups', group(name, terraform)), 400, 'VALIDATION_FAILED');
    const hit = p.errors?.find((e) => path.test(e.path));
    t.truthy(hit, `an error names the field: ${JSON.stringify(p.errors)}`);
    if (message) t.regex(hit?.message ?? '', message);
    t.is((await svc.get(`/as/v1/nodegroups/${name}`)).status, 404, 'no group was made');
    t.false(existsSync(join(svc.dataDir, 'terraform', name)), 'no working directory');
  });
}

// Names never start with a dot, on any platform (NAME_PATTERN): a terraform group's is a directory of its own.
test.serial("a terraform group's name is a directory of its own: one starting with a dot is refused", async (t) => {
  for (const name of ['..', '.', '.x']) {
    const p = isProblem(t, await svc.send('POST', '/as/v1/nodegroups', group(name, {})), 400, 'VALIDATION_FAILED');
    t.true(
      p.errors!.some((e) => e.path === 'body.name' && /a dot only between two other characters/.test(e.message)),
      JSON.stringify(p.errors),
    );
  }
  t.false(existsSync(join(svc.dataDir, 'terraform', 'terraform.tfvars.json')));
  t.false(existsSync(join(svc.dataDir, 'terraform.tfvars.json')));
});

test.serial('PUT refuses the same to a running terraform group, which keeps its spec', async (t) => {
  // A valid group that runs nothing yet (max 0): the replacement is what is refused.
  const valid = { ...group('put', {}), rules: [{ region: 'r1', role: 'origin', min: 0, max: 0, limit: 10 }] };
  t.is((await svc.send('POST', '/as/v1/nodegroups', valid)).status, 201);
  for (const [, terraform, path] of hostile) {
    const p = isProblem(t, await svc.send('PUT', '/as/v1/nodegroups/put', { ...valid, platform: group('put', terraform).platform }), 400, 'VALIDATION_FAILED');
    t.true(
      p.errors!.some((e) => path.test(e.path)),
      JSON.stringify(p.errors),
    );
  }
  t.deepEqual(svc.service.actors.group('put')!.group.platform.terraform.variables, {}, 'the running spec is the valid one');
});

test.serial('after every refusal: no Terraform process was started and no payload ran', (t) => {
  // The valid group of the PUT test is reconciled (init, show); nothing else ran, and it applied nothing.
  const runs = existsSync(cliLog) ? readFileSync(cliLog, 'utf8').trim().split('\n') : [];
  t.deepEqual(
    runs.filter((r) => !r.startsWith(`${join(svc.dataDir, 'terraform', 'put')} `)),
    [],
    "the operator's CLI started for no refused group",
  );
  t.false(
    runs.some((r) => / apply /.test(r)),
    'and applied nothing',
  );
  t.deepEqual(readdirSync(marks), [], 'no marker file');
});

test.serial('a config file with a binary, a module path or a pinned variable stops the start with where the setting belongs', async (t) => {
  const start = (terraform: object) => startTestService({ env, groups: [group('file', terraform)] });
  const binary = await t.throwsAsync(start({ binary: evilCli }), { instanceOf: ConfigError });
  t.regex(binary!.message, /nodeGroups\[0\]\.platform\.terraform\.binary = .*terraform\.binary at the config file's top level, or SWITCHYARD_TERRAFORM_BIN/);
  const path = await t.throwsAsync(start({ module: evilModule }), { instanceOf: ConfigError });
  t.regex(path!.message, /nodeGroups\[0\]\.platform\.terraform\.module = .*is a path/);
  const pinned = await t.throwsAsync(start({ variables: { node_binary: `x'; id > ${mark('file')}; '` } }), { instanceOf: ConfigError });
  t.regex(pinned!.message, /nodeGroups\[0\]\.platform\.terraform\.variables\.node_binary = .*Switchyard sets it/);
  t.deepEqual(readdirSync(marks), []);
  const operator = (terraform: object) => () => parseConfig({ nodeGroups: [staticGroup()], terraform }, 'test');
  t.regex(
    t.throws(operator({ binary: './terraform' }), { instanceOf: ConfigError })!.message,
    /terraform\.binary = "\.\/terraform": must be a program on the PATH \(terraform, tofu\) or an absolute path/,
  );
  t.regex(
    t.throws(operator({ env: ['AWS_REGION', 'SWITCHYARD_JWT_SECRET'] }), { instanceOf: ConfigError })!.message,
    /terraform\.env\[1\] = "SWITCHYARD_JWT_SECRET": is one of the control plane's secrets/,
  );
  t.regex(
    t.throws(() => parseConfig({ nodeGroups: [staticGroup()] }, 'test', { SWITCHYARD_TERRAFORM_BIN: 'bin/terraform' }), { instanceOf: ConfigError })!.message,
    /\(from SWITCHYARD_TERRAFORM_BIN\)/,
  );
  t.is(parseConfig({ nodeGroups: [staticGroup()] }, 'test', { SWITCHYARD_TERRAFORM_MODULES: 'mods' }).terraform.modulesDir, join(process.cwd(), 'mods'));
});

test.serial('groups stored by an older version: their moved settings are dropped, and one that would now be refused is not started', async (t) => {
  const dataDir = tempDir();
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }));
  // As the version before stored every group: the normalized spec, with the terraform defaults
  // (binary among them) filled in whatever the platform.
  const old = (g: object, terraform: object) => {
    const spec = parseConfig({ nodeGroups: [g] }, 'test').nodeGroups[0]!;
    return { ...spec, platform: { ...spec.platform, terraform: { ...spec.platform.terraform, binary: 'terraform', ...terraform } } };
  };
  const store = openStore(dataDir);
  await store.groups.put('kept', { spec: old(staticGroup({ name: 'kept' }), { provider: 'aws' }), source: 'api', updatedAt: 1 });
  await store.groups.put('evil', { spec: old(group('evil', {}), { binary: evilCli, variables: { node_binary: `x'; touch ${mark('stored')}; '` } }), source: 'api', updatedAt: 1 });
  await store.close();
  const svc2 = await startTestService({ dataDir, env, groups: [] });
  t.teardown(() => svc2.close());
  t.is((await svc2.get('/as/v1/nodegroups/kept')).status, 200, 'a group of another platform keeps running');
  t.is((await svc2.get('/as/v1/nodegroups/evil')).status, 404, 'the hostile group is not started');
  t.false(existsSync(join(dataDir, 'terraform', 'evil')));
  t.deepEqual(readdirSync(marks), []);
});
