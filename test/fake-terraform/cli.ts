// A stand-in for the `terraform` binary, for the failures a real one cannot be made to have on
// demand (test/integration/terraform-real.test.ts runs the real CLI where a machine has one). It
// speaks the machine-readable protocol as Terraform 1.11 writes it (the plan's change summary
// first; every diagnostic at the end; no summary or outputs after a failure; `output -json`, `show -json`),
// keeps a state file under a lock as Terraform does, and plays scenarios that a test writes to
// the JSON file named by FAKE_TERRAFORM_SCENARIO:
//   delayMs       how long each resource takes
//   failNodes     node ids whose resources fail, with a diagnostic (a partial failure)
//   failApplies   how many coming applies fail before printing any JSON (counted down)
//   failResources how many coming node resources fail (counted down), whatever their ids
//   hang          applies never finish until interrupted (SIGINT), as a stuck cloud API would
//   hangApplies   how many coming applies hang so (counted down); each logs its pid first
//   holdUntil     a file: each resource waits until it exists (a test releases a slow apply)
//   hangCommands  other commands (init, show, output) that never finish until interrupted
// Every run is appended to fake-terraform.log in the working directory (with the names of the
// environment variables it was given), for tests to read.
// It does not evaluate HCL: it reads the `nodes` map of terraform.tfvars.json, as the real
// binary's modules would, and pretends each node is one `terraform_data.node` resource.
import { appendFileSync, existsSync, mkdirSync, openSync, closeSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';

interface Scenario {
  delayMs?: number;
  failNodes?: string[];
  failApplies?: number;
  failResources?: number;
  hang?: boolean;
  hangApplies?: number;
  holdUntil?: string;
  hangCommands?: string[];
}

interface StateNode {
  region: string;
  role: string;
  public: string;
  private: string;
}

// First of all: Terraform takes an interrupt as "stop cleanly", not as "die".
let interrupted = false;
process.on('SIGINT', () => {
  interrupted = true;
  if (process.argv[2] === 'apply') message('log', 'Interrupt received. Please wait for Terraform to exit or data loss may occur. Gracefully shutting down...');
});

const cwd = process.cwd();
const STATE = `${cwd}/terraform.tfstate`;
const LOCK = `${cwd}/.terraform.tfstate.lock.info`;
const VERSION = '1.9.8';
const args = process.argv.slice(2);
const command = args[0];

const scenarioFile = process.env.FAKE_TERRAFORM_SCENARIO;
function scenario(): Scenario {
  try {
    return scenarioFile ? (JSON.parse(readFileSync(scenarioFile, 'utf8')) as Scenario) : {};
  } catch {
    return {};
  }
}

function log(entry: Record<string, unknown>): void {
  // The names (never the values) of the environment this process was handed, for tests to check
  // that it is the operator's listing, not the service's whole environment.
  const env = Object.keys(process.env).sort();
  appendFileSync(`${cwd}/fake-terraform.log`, `${JSON.stringify({ at: Date.now(), args, env, ...entry })}\n`);
}

function message(type: string, text: string, extra: Record<string, unknown> = {}, level = 'info'): void {
  process.stdout.write(`${JSON.stringify({ '@level': level, '@message': text, '@module': 'terraform.ui', '@timestamp': new Date().toISOString(), type, ...extra })}\n`);
}

function readState(): Record<string, StateNode> {
  if (!existsSync(STATE)) return {};
  return (JSON.parse(readFileSync(STATE, 'utf8')) as { nodes: Record<string, StateNode> }).nodes;
}

function writeState(nodes: Record<string, StateNode>): void {
  writeFileSync(STATE, JSON.stringify({ version: 4, terraform_version: VERSION, nodes }, null, 2));
}

const address = (id: string, region: string) => `module.nodes_${region}.terraform_data.node["${id}"]`;
const hook = (id: string, region: string, action: string, extra: Record<string, unknown> = {}) => ({
  hook: {
    resource: {
      addr: address(id, region),
      module: `module.nodes_${region}`,
      resource: `terraform_data.node["${id}"]`,
      implied_provider: 'terraform',
      resource_type: 'terraform_data',
      resource_name: 'node',
      resource_key: id,
    },
    action,
    ...extra,
  },
});

function addressesOf(id: string): { public: string; private: string } {
  const h = createHash('sha256').update(id).digest();
  return { public: `198.51.100.${(h[0]! % 250) + 2}`, private: `10.${h[1]!}.${h[2]!}.${(h[3]! % 250) + 2}` };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function apply(): Promise<number> {
  if (!existsSync(`${cwd}/.terraform`)) {
    process.stderr.write('\nError: Module not installed\n\n  This module is not yet installed. Run "terraform init" to install all modules required by this configuration.\n');
    return 1;
  }
  const s = scenario();
  if ((s.failApplies ?? 0) > 0) {
    if (scenarioFile) writeFileSync(scenarioFile, JSON.stringify({ ...s, failApplies: s.failApplies! - 1 }));
    process.stderr.write('\nError: Failed to query available provider packages\n\n  Could not retrieve the list of available versions for provider: request timed out\n');
    log({ result: 'early failure' });
    return 1;
  }
  let vars: { nodes?: Record<string, { role: string; region: string; token: string }>; service_url?: string };
  try {
    JSON.parse(readFileSync(`${cwd}/main.tf.json`, 'utf8'));
    vars = JSON.parse(readFileSync(`${cwd}/terraform.tfvars.json`, 'utf8')) as typeof vars;
  } catch (err) {
    process.stderr.write(`\nError: Invalid configuration\n\n  ${(err as Error).message}\n`);
    return 1;
  }
  // The state lock: a second apply in the same directory waits for it, then gives up.
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      closeSync(openSync(LOCK, 'wx'));
      break;
    } catch {
      if (Date.now() > deadline) {
        message('diagnostic', 'Error acquiring the state lock', { diagnostic: { severity: 'error', summary: 'Error acquiring the state lock', detail: 'state is locked by another apply' } }, 'error');
        return 1;
      }
      await sleep(50);
    }
  }
  try {
    message('version', `Terraform ${VERSION}`, { terraform: VERSION, ui: '1.2' });
    const state = readState();
    const desired = vars.nodes ?? {};
    const toCreate = Object.keys(desired)
      .filter((id) => !state[id])
      .sort();
    const toDestroy = Object.keys(state)
      .filter((id) => !desired[id])
      .sort();
    const failed: string[] = [];
    // As the real CLI: the plan's summary first, and every diagnostic at the end of the run.
    const diagnostics: Array<() => void> = [];
    message('change_summary', `Plan: ${toCreate.length} to add, 0 to change, ${toDestroy.length} to destroy.`, {
      changes: { add: toCreate.length, change: 0, import: 0, remove: toDestroy.length, operation: 'plan' },
    });
    let added = 0;
    let removed = 0;
    let hang = s.hang === true;
    if ((s.hangApplies ?? 0) > 0) {
      hang = true;
      if (scenarioFile) writeFileSync(scenarioFile, JSON.stringify({ ...s, hangApplies: s.hangApplies! - 1 }));
    }
    // Before any resource starts: a test that sees one start knows where to send its interrupt.
    if (hang) log({ result: 'hanging', pid: process.pid });
    const wait = async () => {
      const total = hang ? Infinity : (s.delayMs ?? 0);
      const start = Date.now();
      while (!interrupted && Date.now() - start < total) await sleep(Math.min(50, total));
      while (!interrupted && s.holdUntil && !existsSync(s.holdUntil)) await sleep(20);
    };
    for (const id of toDestroy) {
      if (interrupted) break;
      const region = state[id]!.region;
      message('apply_start', `${address(id, region)}: Destroying...`, hook(id, region, 'delete'));
      await wait();
      if (interrupted) break;
      delete state[id];
      writeState(state);
      removed++;
      message('apply_complete', `${address(id, region)}: Destruction complete`, hook(id, region, 'delete', { elapsed_seconds: 0 }));
    }
    for (const id of toCreate) {
      if (interrupted) break;
      const n = desired[id]!;
      message('apply_start', `${address(id, n.region)}: Creating...`, hook(id, n.region, 'create'));
      await wait();
      if (interrupted) break;
      const failByCount = (s.failResources ?? 0) > 0;
      if (failByCount || (s.failNodes ?? []).includes(id)) {
        if (failByCount && scenarioFile) {
          s.failResources! -= 1;
          writeFileSync(scenarioFile, JSON.stringify(s));
        }
        failed.push(id);
        message('apply_errored', `${address(id, n.region)}: Creation errored`, hook(id, n.region, 'create', { elapsed_seconds: 0 }), 'error');
        diagnostics.push(() =>
          message(
            'diagnostic',
            'Error: creating node: InsufficientInstanceCapacity',
            {
              diagnostic: {
                severity: 'error',
                summary: 'creating node: InsufficientInstanceCapacity',
                detail: 'There is no capacity for the requested size in this zone.',
                address: address(id, n.region),
              },
            },
            'error',
          ),
        );
        continue;
      }
      state[id] = { region: n.region, role: n.role, ...addressesOf(id) };
      writeState(state);
      added++;
      message('apply_complete', `${address(id, n.region)}: Creation complete after 0s [id=${id}]`, hook(id, n.region, 'create', { id_key: 'id', id_value: id, elapsed_seconds: 0 }));
    }
    if (interrupted) {
      // The real CLI says so twice, with no address: neither belongs to a node.
      for (let i = 0; i < 2; i++) diagnostics.push(() => message('diagnostic', 'Error: execution halted', { diagnostic: { severity: 'error', summary: 'execution halted', detail: '' } }, 'error'));
    }
    if (interrupted || failed.length > 0) {
      // A failed apply writes no summary of its own and no outputs: only its diagnostics.
      for (const d of diagnostics) d();
    } else {
      message('change_summary', `Apply complete! Resources: ${added} added, 0 changed, ${removed} destroyed.`, { changes: { add: added, change: 0, remove: removed, operation: 'apply' } });
      message('outputs', 'Outputs: 1', { outputs: { nodes: { sensitive: true, type: ['map', ['object', { public: 'string', private: 'string' }]] } } });
    }
    log({
      result: interrupted ? 'interrupted' : failed.length > 0 ? 'partial' : 'ok',
      created: toCreate.filter((id) => !failed.includes(id) && state[id]),
      destroyed: toDestroy.filter((id) => !state[id]),
      failed,
    });
    return interrupted || failed.length > 0 ? 1 : 0;
  } finally {
    rmSync(LOCK, { force: true });
  }
}

async function main(): Promise<number> {
  if (command && command !== 'apply' && scenario().hangCommands?.includes(command)) {
    while (!interrupted) await sleep(50);
    process.stderr.write(`\nError: ${command} was interrupted\n`);
    log({ result: 'interrupted' });
    return 1;
  }
  switch (command) {
    case 'version':
      process.stdout.write(args.includes('-json') ? `${JSON.stringify({ terraform_version: VERSION, platform: 'linux_amd64', provider_selections: {} })}\n` : `Terraform v${VERSION}\n`);
      return 0;
    case 'init':
      if (!existsSync(`${cwd}/main.tf.json`)) {
        process.stderr.write('\nError: No configuration files\n');
        return 1;
      }
      mkdirSync(`${cwd}/.terraform/modules`, { recursive: true });
      writeFileSync(`${cwd}/.terraform.lock.hcl`, '# fake lock file\n');
      log({ result: 'ok' });
      process.stdout.write('\nTerraform has been successfully initialized!\n');
      return 0;
    case 'apply':
      return apply();
    case 'output': {
      const nodes = readState();
      const value = Object.fromEntries(Object.entries(nodes).map(([id, n]) => [id, { public: n.public, private: n.private }]));
      process.stdout.write(`${JSON.stringify({ nodes: { sensitive: true, type: ['map', ['object', { public: 'string', private: 'string' }]], value } })}\n`);
      return 0;
    }
    case 'show': {
      const nodes = readState();
      if (Object.keys(nodes).length === 0 && !existsSync(STATE)) {
        process.stdout.write(`${JSON.stringify({ format_version: '1.0' })}\n`);
        return 0;
      }
      const byRegion = new Map<string, Array<[string, StateNode]>>();
      for (const entry of Object.entries(nodes)) byRegion.set(entry[1].region, [...(byRegion.get(entry[1].region) ?? []), entry]);
      const child_modules = [...byRegion].map(([region, list]) => ({
        address: `module.nodes_${region}`,
        resources: list.map(([id, n]) => ({
          address: address(id, region),
          mode: 'managed',
          type: 'terraform_data',
          name: 'node',
          index: id,
          provider_name: 'terraform.io/builtin/terraform',
          schema_version: 0,
          values: { id, input: { role: n.role, region }, output: { public: n.public, private: n.private } },
          sensitive_values: {},
        })),
      }));
      process.stdout.write(`${JSON.stringify({ format_version: '1.0', terraform_version: VERSION, values: { root_module: { child_modules } } })}\n`);
      return 0;
    }
    default:
      process.stderr.write(`fake terraform: unsupported command ${command ?? '(none)'}\n`);
      return 1;
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    process.stderr.write(`fake terraform: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
