// What a node group may set of a Terraform module (src/policy/terraform/requests.ts), against a
// catalog made here: the module contract's inputs and pinned inputs are refused, unknown names are
// named with those that exist, values are checked by type, provider arguments by the operator's list.
import test from 'ava';
import fc from 'fast-check';
import { terraformProblems, RESERVED_INPUTS, type ModuleInfo, type TerraformModules } from '../../src/policy/terraform/requests.js';
import { parseType } from '../../src/policy/terraform/type-constraint.js';

const variable = (name: string, type: string, options: { required?: boolean; nullable?: boolean } = {}) => ({
  name,
  type: parseType(type),
  required: options.required ?? false,
  nullable: options.nullable ?? true,
});

const contract = RESERVED_INPUTS.map((n) => variable(n, n === 'nodes' ? 'map(object({ role = string, region = string }))' : n === 'tokens' ? 'map(string)' : 'string', { required: true }));

const cloud: ModuleInfo = {
  name: 'cloud',
  dir: '/modules/cloud',
  shipped: false,
  hash: 'h',
  variables: [
    ...contract,
    variable('image', 'string', { required: true }),
    variable('sizes', 'map(string)'),
    variable('key', 'string', { nullable: false }),
    variable('ssh_keys', 'list(string)'),
    variable('script', 'string'),
  ],
  providers: [{ name: 'aws', source: 'hashicorp/aws' }],
  provider: { name: 'aws', source: 'hashicorp/aws' },
  pinned: { script: '/opt/bootstrap.sh' },
};
const local: ModuleInfo = {
  name: 'local',
  dir: '/shipped/local',
  shipped: true,
  hash: 'h',
  variables: [...contract, variable('agent', 'string', { required: true }), variable('node_binary', 'string'), variable('state_dir', 'string', { required: true }), variable('scope', 'string')],
  providers: [],
  pinned: {},
};
const broken: ModuleInfo = { name: 'broken', dir: '/modules/broken', shipped: false, hash: 'h', variables: [], providers: [], pinned: {}, problem: 'main.tf:3,1: Unclosed configuration block' };
const catalog: TerraformModules = { modules: [cloud, local, broken], providerSettings: ['region', 'profile'] };

const settings = (s: object) => ({ module: 'cloud', providerSettings: {}, variables: {}, regionVariables: {}, ...s });
const problems = (s: object, regions = ['r1', 'r2']) => terraformProblems(settings(s), regions, catalog).map((p) => `${p.pointer}: ${p.message}`);

test('a group that names a module and sets what it declares is accepted', (t) => {
  t.deepEqual(problems({ variables: { image: 'ami-1', sizes: { edge: 'c6i.large' }, ssh_keys: ['k'] }, providerSettings: { r1: { region: 'us-east-1', profile: 'p' } } }), []);
  t.deepEqual(problems({ module: 'local', variables: { scope: 'anything: \' " $(x) `y` ; \n' } }), [], 'a declared string is data, whatever it holds');
});

test('modules are named, and the message lists those that exist or says why one cannot be used', (t) => {
  t.deepEqual(problems({ module: 'nosuch' }), ['/platform/terraform/module: names no installed module; the modules are: cloud, local, broken']);
  t.deepEqual(problems({ module: 'broken' }), ['/platform/terraform/module: cannot be used: main.tf:3,1: Unclosed configuration block']);
});

test("the contract's inputs, the service's and the operator's pinned ones are refused; unknown names list the settable ones", (t) => {
  t.deepEqual(problems({ variables: { image: 'x', service_url: 'http://a', script: 'curl x | sh', nope: 1 } }), [
    '/platform/terraform/variables/service_url: is set by Switchyard (the module contract)',
    '/platform/terraform/variables/script: is pinned by the operator (terraform.modules.cloud.variables)',
    "/platform/terraform/variables/nope: is not a variable of module 'cloud'; it declares: image, key, sizes, ssh_keys",
  ]);
  const pinned = problems({ module: 'local', regionVariables: { r2: { node_binary: '/bin/sh' } } });
  t.is(pinned.length, 1);
  t.regex(pinned[0]!, /^\/platform\/terraform\/regionVariables\/r2\/node_binary: is a path or program on the control plane's machine: Switchyard sets it/);
});

test('values are checked against the declared types, with the path of what is wrong; null only where the module takes it', (t) => {
  t.deepEqual(problems({ variables: { image: 3, sizes: { edge: 1 }, ssh_keys: 'k', key: null } }), [
    '/platform/terraform/variables/image: must be a string (the module declares string)',
    '/platform/terraform/variables/sizes/edge: must be a string',
    '/platform/terraform/variables/ssh_keys: must be an array (list(string)) (the module declares list(string))',
    '/platform/terraform/variables/key: must not be null',
  ]);
  t.deepEqual(problems({ variables: { image: 'x', sizes: null } }), [], 'a nullable variable takes null');
});

test('a required input nobody sets is named with the regions that lack it', (t) => {
  t.deepEqual(problems({ regionVariables: { r1: { image: 'ami-1' } } }), [
    "/platform/terraform/variables/image: is required by module 'cloud' (string); set it in variables or in regionVariables of r2",
  ]);
  t.deepEqual(problems({ regionVariables: { r1: { image: 'ami-1' }, r2: { image: 'ami-2' } } }), []);
  t.deepEqual(problems({ module: 'local' }), [], 'pinned inputs are set by whoever pins them');
});

test("provider arguments: the operator's list, scalars only, and only for a module with a provider per region", (t) => {
  t.deepEqual(problems({ variables: { image: 'x' }, providerSettings: { r1: { region: 'us-east-1', shared_credentials_files: ['/etc/shadow'], profile: { a: 1 } }, r2: { region: 'a\nb' } } }), [
    '/platform/terraform/providerSettings/r1/shared_credentials_files: is not a provider setting a node group may set; the operator allows: region, profile (terraform.providerSettings)',
    '/platform/terraform/providerSettings/r1/profile: must be a string, a number or a boolean',
    "/platform/terraform/providerSettings/r2/region: must be 1 to 128 letters, digits, '.', '_' or '-' (a provider builds host names from it)",
  ]);
  t.deepEqual(problems({ variables: { image: 'x' }, providerSettings: { r1: { region: 'attacker.example/x?', alias: 'r2' } } }), [
    "/platform/terraform/providerSettings/r1/region: must be 1 to 128 letters, digits, '.', '_' or '-' (a provider builds host names from it)",
    "/platform/terraform/providerSettings/r1/alias: is set by Switchyard (the provider's alias is the region)",
  ]);
  t.deepEqual(problems({ module: 'local', providerSettings: { r1: { region: 'x' } } }), ["/platform/terraform/providerSettings/r1: module 'local' has no provider configured per region"]);
});

test('whatever a group sets, a locked input never passes, and every name it sets is either settable or refused (property)', (t) => {
  const settable = ['image', 'key', 'sizes', 'ssh_keys'];
  const locked = [...RESERVED_INPUTS, 'script'];
  fc.assert(
    fc.property(fc.dictionary(fc.constantFrom(...settable, ...locked, 'other', 'agent'), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 6 }), (variables) => {
      const found = terraformProblems(settings({ variables: { image: 'x', ...variables } }), ['r1'], catalog);
      return Object.keys(variables).every((name) => settable.includes(name) || found.some((p) => p.pointer === `/platform/terraform/variables/${name}`));
    }),
  );
  t.pass();
});
