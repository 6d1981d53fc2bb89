import test from 'ava';
import fc from 'fast-check';
import { ApplyStream, nodeAddresses, nodeIdOf, nodesInState } from '../../src/platforms/terraform/messages.js';
import { readVariables, renderInputs, renderRoot, renderVariables, type NodeVars } from '../../src/platforms/terraform/render.js';
import { parsedGroup, staticGroup } from '../helpers/fixtures.js';

const group = (terraform: object) => parsedGroup({ ...staticGroup({ regions: ['us-east', 'eu-west'] }), platform: { type: 'terraform', terraform } });

const AWS = { name: 'aws', source: 'hashicorp/aws' };

test('the root module has one module per region, its provider alias, the nodes of its region, and merged outputs', (t) => {
  const g = group({
    module: 'aws',
    providerSettings: { 'us-east': { region: 'us-east-1' }, 'eu-west': { region: 'eu-central-1' } },
    variables: { image_id: 'ami-1' },
    regionVariables: { 'eu-west': { image_id: 'ami-2' } },
  });
  const inputs = renderInputs(g, {});
  const root = renderRoot(g, { source: './modules/aws', provider: AWS }, inputs) as {
    provider: { aws: unknown[] };
    module: Record<string, Record<string, unknown>>;
    output: { nodes: { value: string } };
    variable: Record<string, { sensitive?: boolean }>;
  };
  t.deepEqual(root.provider.aws, [
    { alias: 'us-east', region: '${var.provider_settings["us-east"]["region"]}' },
    { alias: 'eu-west', region: '${var.provider_settings["eu-west"]["region"]}' },
  ]);
  t.deepEqual(Object.keys(root.module), ['nodes_us-east', 'nodes_eu-west']);
  t.like(root.module['nodes_eu-west'], {
    source: './modules/aws',
    providers: { aws: 'aws.eu-west' },
    image_id: '${var.inputs["eu-west"]["image_id"]}',
    group: '${var.group}',
    region: 'eu-west',
    tokens: '${var.tokens}',
  });
  t.is(root.module['nodes_us-east']!.nodes, '${{ for id, node in var.nodes : id => node if node.region == "us-east" }}');
  t.is(root.output.nodes.value, '${merge(module.nodes_us-east.nodes, module.nodes_eu-west.nodes)}');
  t.true(root.variable.tokens!.sensitive);
  t.falsy(root.variable.nodes!.sensitive, 'for_each cannot run over a sensitive map');
  t.deepEqual((root as unknown as { terraform: unknown }).terraform, { required_version: '>= 1.5.0', required_providers: { aws: { source: 'hashicorp/aws' } } });
  const vars = renderVariables(new Map(), 'http://x', g, inputs) as { inputs: Record<string, Record<string, unknown>>; provider_settings: unknown; group: string };
  t.deepEqual(vars.inputs, { 'us-east': { image_id: 'ami-1' }, 'eu-west': { image_id: 'ami-2' } });
  t.deepEqual(vars.provider_settings, { 'us-east': { region: 'us-east-1' }, 'eu-west': { region: 'eu-central-1' } });
  t.is(vars.group, 'g');
});

test("the root names the module's provider and its source; a module without one gets no provider configuration", (t) => {
  const g = group({ module: 'digitalocean' });
  const root = renderRoot(g, { source: './m', provider: { name: 'digitalocean', source: 'digitalocean/digitalocean' } }, renderInputs(g, {})) as {
    terraform: { required_providers?: unknown };
    provider?: Record<string, unknown[]>;
  };
  t.deepEqual(root.terraform.required_providers, { digitalocean: { source: 'digitalocean/digitalocean' } });
  t.deepEqual(root.provider, { digitalocean: [{ alias: 'us-east' }, { alias: 'eu-west' }] });
  const local = renderRoot(g, { source: './m' }, renderInputs(g, {})) as { terraform: { required_providers?: unknown }; provider?: unknown };
  t.is(local.terraform.required_providers, undefined);
  t.is(local.provider, undefined);
});

test("pinned inputs win over a group's, and reach every region", (t) => {
  const g = group({ module: 'local', variables: { scope: 'x', agent: '/tmp/evil' } });
  t.deepEqual(renderInputs(g, { agent: '/opt/switchyard/agent.js' })['eu-west'], { scope: 'x', agent: '/opt/switchyard/agent.js' });
});

const identifier = fc.stringMatching(/^[a-z_][a-z0-9_]{0,10}$/);

test('no value of a node group is written into the configuration: only names, whatever the values (property)', (t) => {
  fc.assert(
    fc.property(fc.uniqueArray(identifier, { maxLength: 5 }), fc.array(fc.jsonValue(), { minLength: 10, maxLength: 10 }), fc.array(fc.jsonValue(), { minLength: 10, maxLength: 10 }), (names, a, b) => {
      const withValues = (values: unknown[]) => group({ module: 'aws', variables: Object.fromEntries(names.map((n, i) => [n, values[i]])), providerSettings: { 'us-east': { region: values[9] } } });
      const ga = withValues(a);
      const gb = withValues(b);
      const rootA = renderRoot(ga, { source: './m', provider: AWS }, renderInputs(ga, {}));
      const rootB = renderRoot(gb, { source: './m', provider: AWS }, renderInputs(gb, {}));
      const varsA = renderVariables(new Map(), 'http://x', ga, renderInputs(ga, {})) as { inputs: Record<string, unknown> };
      // The values themselves, unchanged, are in the variables file, which Terraform reads as data.
      return JSON.stringify(rootA) === JSON.stringify(rootB) && JSON.stringify(varsA.inputs['us-east']) === JSON.stringify(Object.fromEntries(names.map((n, i) => [n, a[i]])));
    }),
  );
  t.pass();
});

test('the variables file keys nodes by id and carries their tokens back', (t) => {
  const g = group({});
  fc.assert(
    fc.property(
      fc.dictionary(
        fc.stringMatching(/^[a-z0-9-]{1,20}$/),
        fc.record({ role: fc.constantFrom('origin' as const, 'edge' as const), region: fc.constantFrom('a', 'b'), token: fc.string({ minLength: 1 }) }),
      ),
      (nodes) => {
        const map = new Map<string, NodeVars>(Object.entries(nodes));
        const json = JSON.parse(JSON.stringify(renderVariables(map, 'http://x', g, renderInputs(g, {})))) as { nodes: Record<string, unknown> };
        const byId = (a: [string, unknown], b: [string, unknown]) => (a[0] < b[0] ? -1 : 1);
        return JSON.stringify([...readVariables(json)].sort(byId)) === JSON.stringify([...map].sort(byId)) && Object.keys(json.nodes).every((id) => map.has(id));
      },
    ),
  );
  t.pass();
});

test('the apply stream is read per node: progress, errors with their diagnostics, and plain text', (t) => {
  const s = new ApplyStream();
  const line = (type: string, extra: object) => JSON.stringify({ '@level': 'info', '@message': type, '@module': 'tofu.ui', type, ...extra });
  const addr = (id: string) => `module.nodes_r1.aws_instance.node["${id}"]`;
  t.like(s.push(line('apply_start', { hook: { resource: { addr: addr('a') }, action: 'create' } })), { phase: 'start', nodeId: 'a' });
  s.push(line('apply_complete', { hook: { resource: { addr: addr('a') }, action: 'create', elapsed_seconds: 41 } }));
  s.push(line('apply_errored', { hook: { resource: { addr: addr('b') }, action: 'create' } }));
  s.push(line('diagnostic', { diagnostic: { severity: 'error', summary: 'creating EC2 Instance: InsufficientInstanceCapacity', detail: 'try another zone', address: addr('b') } }));
  s.push(line('change_summary', { changes: { add: 1, change: 0, remove: 0 } }));
  s.push('Error: something before the JSON started');
  const r = s.result();
  t.deepEqual([...r.completed.keys()], ['a']);
  t.is(r.errored.get('b'), 'creating EC2 Instance: InsufficientInstanceCapacity: try another zone');
  t.deepEqual(r.summary, { add: 1, change: 0, remove: 0 });
  t.deepEqual(r.text, ['Error: something before the JSON started']);
  t.is(nodeIdOf('module.nodes_r1.x.y["has \\"quote\\""]'), 'has "quote"');
  t.is(nodeIdOf('aws_security_group.media'), undefined);
  t.is(nodeIdOf('aws_security_group.role["edge"]'), undefined, "a resource of the operator's own root configuration is not a node");
});

test("the apply stream as real Terraform writes it: the plan's summary first, every diagnostic at the end, some with no address", (t) => {
  const s = new ApplyStream();
  const line = (type: string, extra: object) => JSON.stringify({ '@level': 'info', '@message': type, '@module': 'terraform.ui', type, ...extra });
  const addr = (id: string) => `module.nodes_r1.terraform_data.node["${id}"]`;
  s.push(line('change_summary', { changes: { add: 3, change: 0, import: 0, remove: 0, operation: 'plan' } }));
  s.push(line('apply_start', { hook: { resource: { addr: addr('a') }, action: 'create' } }));
  s.push(line('apply_complete', { hook: { resource: { addr: addr('a') }, action: 'create' } }));
  s.push(line('apply_errored', { hook: { resource: { addr: addr('b') }, action: 'create' } }));
  s.push(line('apply_errored', { hook: { resource: { addr: addr('c') }, action: 'create' } }));
  s.push(line('diagnostic', { diagnostic: { severity: 'error', summary: 'local-exec provisioner error', detail: 'exit status 1', address: addr('b') } }));
  s.push(line('diagnostic', { diagnostic: { severity: 'error', summary: 'execution halted' } }));
  s.push(line('diagnostic', { diagnostic: { severity: 'error', summary: 'execution halted' } }));
  const r = s.result();
  t.is(r.summary, undefined, "a failed apply writes no summary of its own; the plan's is not what was done");
  t.is(r.errored.get('b'), 'local-exec provisioner error: exit status 1', 'not overwritten by the addressless diagnostics after it');
  t.is(r.errored.get('c'), 'create of module.nodes_r1.terraform_data.node["c"] failed');
  t.deepEqual(
    r.diagnostics.filter((d) => !d.nodeId).map((d) => d.summary),
    ['execution halted', 'execution halted'],
  );
  s.push(line('change_summary', { changes: { add: 1, change: 0, import: 0, remove: 0, operation: 'apply' } }));
  t.deepEqual(s.result().summary, { add: 1, change: 0, remove: 0 });
});

test('outputs and state are read into node addresses and ids', (t) => {
  t.deepEqual(
    [...nodeAddresses({ nodes: { value: { a: { public_ip: '1.2.3.4', private_ip: '10.0.0.1' }, b: { public: '5.6.7.8' } } } })],
    [
      ['a', { public: '1.2.3.4', private: '10.0.0.1' }],
      ['b', { public: '5.6.7.8' }],
    ],
  );
  const show = {
    values: {
      root_module: {
        child_modules: [
          {
            resources: [
              { address: 'module.nodes_r1.terraform_data.node["x"]', mode: 'managed' },
              { address: 'module.nodes_r1.data.aws_ami.media["y"]', mode: 'data' },
            ],
          },
        ],
      },
    },
  };
  t.deepEqual([...nodesInState(show)], ['x']);
  const tainted = { values: { root_module: { child_modules: [{ resources: [{ address: 'module.nodes_r1.terraform_data.node["x"]', mode: 'managed', tainted: true }] }] } } };
  t.deepEqual([...nodesInState(tainted)], [], 'a tainted resource is one Terraform will replace: its node is not there');
  t.deepEqual([...nodesInState({ format_version: '1.0' })], []);
});
