// Drives the Terraform (or OpenTofu) CLI in one working directory per node group (docs/nodes.md).
// Requests (a node to create, a node to destroy) change the desired `nodes` map; one apply at a
// time turns it into reality, and requests that arrive meanwhile go into the next apply. An apply
// that fails is retried with backoff; nodes whose resources finished are settled at once (Terraform
// never rolls back: a re-run converges). An apply that outlives its timeout is interrupted once
// (SIGINT: Terraform then stops cleanly and saves its state) and waited for.
//
// What runs is the operator's: the CLI (`binary`), the module as it was read at start (./modules.ts),
// and an environment of the operator's listing (./policy.ts FIXED_ENV, terraform.env), never the
// service's whole environment. A group's settings are checked against the module again before
// anything is written or run (the API and the config file checked them already).
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NodeGroup } from '../../config/types.js';
import type { Role } from '../../domain/vocabulary.js';
import { backendEnv, httpBackend, type BackendSettings } from './backend.js';
import { ApplyStream, nodeAddresses, nodesInState, type NodeAddress, type Progress } from './messages.js';
import { hashDir } from './modules.js';
import { FIXED_ENV, moduleNamed, SECRET_ENV, terraformProblems, type ModuleInfo, type TerraformModules } from '../../policy/terraform/requests.js';
import { readablePath } from '../../schemas/json-pointer.js';
import { readVariables, renderInputs, renderRoot, renderVariables, type NodeVars } from './render.js';

/** Arms a timeout: `fire` after `ms` unless the returned function cancels it. Injected by tests. */
export interface Timers {
  /** `what` names the command it is for (init, show, output, apply). */
  start(ms: number, fire: () => void, what: string): () => void;
}

export const realTimers: Timers = {
  start(ms, fire) {
    const timer = setTimeout(fire, ms);
    return () => clearTimeout(timer);
  },
};

export interface RunnerOptions {
  dir: string;
  group: NodeGroup;
  /** The installed modules: the group's is copied into the working directory (Terraform wants local sources to start with ./). */
  modules: TerraformModules;
  /** Inputs Switchyard or the operator sets for a module (paths on this machine, say). */
  pinned(module: ModuleInfo): Record<string, unknown>;
  /** The CLI: the operator's terraform.binary (or SWITCHYARD_TERRAFORM_BIN). */
  binary: string;
  /** Names of environment variables Terraform may see besides FIXED_ENV (the operator's terraform.env). */
  passEnv: readonly string[];
  serviceUrl: string;
  nodeToken(nodeId: string): string;
  onProgress(event: RunnerProgress): void;
  /** The environment the passed variables are taken from; default process.env. */
  env?: NodeJS.ProcessEnv;
  timers?: Timers;
  /**
   * Cluster mode (docs/cluster.md): the state is behind this instance's http backend, shared by
   * every instance; the working directory keeps none. Credentials go in the environment only.
   */
  backend?: BackendSettings;
}

export type RunnerProgress =
  | { operation: 'apply' | 'init' | 'output' | 'show'; phase: 'begin' | 'end'; ok?: boolean; message?: string; attempt?: number }
  | ({ operation: 'apply' } & Progress)
  | { operation: 'apply'; phase: 'retry'; attempt: number; inMs: number; message: string };

interface Waiter {
  kind: 'create' | 'destroy';
  /** Applies started before this waiter: the first apply numbered after it settles it. */
  after: number;
  resolve(address: NodeAddress): void;
  reject(err: Error): void;
}

export class TerraformError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TerraformError';
  }
}

const VARS = 'terraform.tfvars.json';
const ROOT = 'main.tf.json';

export class TerraformRunner {
  private desired = new Map<string, NodeVars>();
  private readonly waiters = new Map<string, Waiter[]>();
  private cycle: Promise<void> | null = null;
  private dirty = false;
  private applies = 0;
  private group: NodeGroup;
  private inState = new Set<string>();
  private closing = false;

  constructor(private readonly o: RunnerOptions) {
    this.group = o.group;
    mkdirSync(o.dir, { recursive: true, mode: 0o700 });
    // Tokens are kept from one start to the next: a new token would change every node's inputs.
    try {
      this.desired = readVariables(JSON.parse(readFileSync(join(o.dir, VARS), 'utf8')));
    } catch {
      /* first start */
    }
  }

  private get settings() {
    return this.group.platform.terraform;
  }

  reconfigure(group: NodeGroup): void {
    this.group = group;
  }

  /** Nodes the last `show -json` or apply found in the state. */
  has(id: string): boolean {
    return this.inState.has(id);
  }

  /** Creates the node (or keeps it) and resolves with its addresses once an apply made it. */
  ensure(node: { id: string; role: Role; region: string }): Promise<NodeAddress> {
    if (!this.desired.has(node.id)) this.desired.set(node.id, { role: node.role, region: node.region, token: this.o.nodeToken(node.id) });
    return this.wait(node.id, 'create');
  }

  /** Takes a node that exists into the desired set without an apply (reconciliation at start). */
  adopt(node: { id: string; role: Role; region: string }): void {
    if (!this.desired.has(node.id)) this.desired.set(node.id, { role: node.role, region: node.region, token: this.o.nodeToken(node.id) });
  }

  /** Keeps only these nodes in the desired set (reconciliation: what the state and the records agree on). */
  retain(ids: ReadonlySet<string>): void {
    for (const id of [...this.desired.keys()]) if (!ids.has(id)) this.desired.delete(id);
  }

  /** Drops a node from the desired set without an apply (one the state has lost: it is replaced, not made again). */
  forget(id: string): void {
    this.desired.delete(id);
  }

  /** Destroys the node's resources; resolves once an apply removed them. */
  remove(id: string): Promise<void> {
    if (!this.desired.has(id) && !this.inState.has(id)) return Promise.resolve();
    this.desired.delete(id);
    return this.wait(id, 'destroy').then(() => undefined);
  }

  private wait(id: string, kind: Waiter['kind']): Promise<NodeAddress> {
    return new Promise((resolve, reject) => {
      const list = this.waiters.get(id) ?? [];
      list.push({ kind, after: this.applies, resolve, reject });
      this.waiters.set(id, list);
      this.kick();
    });
  }

  private kick(): void {
    if (this.cycle) {
      this.dirty = true;
      return;
    }
    this.cycle = (async () => {
      try {
        await sleep(this.settings.batchWindow);
        do {
          this.dirty = false;
          await this.applyWithRetries();
        } while (this.dirty && !this.closing);
      } finally {
        this.cycle = null;
      }
    })();
  }

  /** Lets the current apply finish and refuses new work: requests no apply took are failed. */
  async close(): Promise<void> {
    this.closing = true;
    await this.cycle?.catch(() => {});
    for (const [id, list] of [...this.waiters])
      for (const w of [...list]) this.settle(id, w, () => w.reject(new TerraformError('the Terraform runner of this group stopped (the service stops, or the group moved to another instance)')));
  }

  // ---- the CLI ------------------------------------------------------------------------------

  private run(args: string[], onLine?: (line: string) => void, timeoutMs?: number): Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean }> {
    return new Promise((resolve) => {
      const child = spawn(this.o.binary, args, {
        cwd: this.o.dir,
        env: { ...terraformEnv(this.o.env ?? process.env, this.o.passEnv), ...(this.o.backend ? backendEnv(this.o.backend, this.group.name) : {}) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      let partial = '';
      let timedOut = false;
      const cancel = timeoutMs
        ? (this.o.timers ?? realTimers).start(
            timeoutMs,
            () => {
              timedOut = true;
              // Once: a second interrupt makes Terraform abandon its work and can lose state.
              child.kill('SIGINT');
            },
            args[0]!,
          )
        : undefined;
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
        if (!onLine) return;
        partial += chunk;
        let nl: number;
        while ((nl = partial.indexOf('\n')) >= 0) {
          onLine(partial.slice(0, nl));
          partial = partial.slice(nl + 1);
        }
      });
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const done = (code: number | null) => {
        cancel?.();
        if (onLine && partial) onLine(partial);
        resolve({ code, stdout, stderr, timedOut });
      };
      child.once('error', (err) => {
        stderr += `${err.message}\n`;
        done(127);
      });
      child.once('close', done);
    });
  }

  private why(r: { stdout: string; stderr: string; timedOut: boolean }): string {
    return r.timedOut ? `took longer than ${this.settings.commandTimeout} ms and was interrupted` : tail(r.stderr || r.stdout);
  }

  /** Writes the root module, the variables file and the module copy; runs init when they changed. */
  private async prepare(): Promise<void> {
    const tf = this.settings;
    const module = moduleNamed(this.o.modules, tf.module);
    const problems = terraformProblems(
      tf,
      this.group.regions.map((r) => r.name),
      this.o.modules,
    );
    if (!module || problems.length > 0) {
      throw new TerraformError(`refused to run: ${problems.map((p) => `${readablePath(p.pointer)} ${p.message}`).join('; ')}`);
    }
    const target = join(this.o.dir, 'modules', module.name);
    const inputs = renderInputs(this.group, this.o.pinned(module));
    const backend = this.o.backend ? httpBackend(this.o.backend, this.group.name) : undefined;
    const root = renderRoot(this.group, { source: `./modules/${module.name}`, ...(module.provider ? { provider: module.provider } : {}) }, inputs, backend);
    const marker = join(this.o.dir, '.switchyard-init');
    const fingerprint = createHash('sha256')
      .update(module.hash)
      .update(JSON.stringify({ terraform: root.terraform, provider: root.provider ?? null, module: root.module }))
      .digest('hex');
    const write = (file: string, content: unknown) => {
      const tmp = join(this.o.dir, `.${file}.tmp`);
      writeFileSync(tmp, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
      renameSync(tmp, join(this.o.dir, file));
    };
    const variables = () => renderVariables(this.desired, this.o.serviceUrl, this.group, inputs);
    if (!existsSync(marker) || readFileSync(marker, 'utf8') !== fingerprint || !existsSync(join(this.o.dir, '.terraform'))) {
      rmSync(target, { recursive: true, force: true });
      cpSync(module.dir, target, { recursive: true, dereference: true });
      // What runs must be what requests were checked against: the module as it was read at start.
      if (hashDir(target) !== module.hash) {
        rmSync(target, { recursive: true, force: true });
        throw new TerraformError(`module '${module.name}' changed on disk since the service read it at start: restart the service to use it`);
      }
      write(ROOT, root);
      write(VARS, variables());
      // The shared state is the truth: a state file left here by a run without the cluster would
      // be offered for migration (and copied over the shared one with -force-copy): never.
      const local = join(this.o.dir, 'terraform.tfstate');
      if (backend && existsSync(local) && holdsResources(local)) {
        throw new TerraformError(`${local} holds a state from a run outside cluster mode: the group's state is shared now; move the file away (and import what it names) to go on`);
      }
      this.o.onProgress({ operation: 'init', phase: 'begin' });
      // -reconfigure: the backend's address is this instance's (its port may change); nothing is migrated.
      const r = await this.run(['init', '-input=false', '-no-color', ...(backend ? ['-reconfigure'] : [])], undefined, tf.applyTimeout);
      const ok = r.code === 0 && !r.timedOut;
      const why = r.timedOut ? `took longer than ${tf.applyTimeout} ms and was interrupted` : tail(r.stderr || r.stdout);
      this.o.onProgress({ operation: 'init', phase: 'end', ok, ...(ok ? {} : { message: why }) });
      if (!ok) throw new TerraformError(`terraform init failed: ${why}`);
      writeFileSync(marker, fingerprint);
    }
    write(ROOT, root);
    write(VARS, variables());
  }

  /** The node ids in Terraform's state (`show -json`), for reconciliation at start. */
  async state(): Promise<Set<string>> {
    await this.prepare();
    const r = await this.run(['show', '-json', '-no-color'], undefined, this.settings.commandTimeout);
    if (r.code !== 0 || r.timedOut) throw new TerraformError(`terraform show failed: ${this.why(r)}`);
    this.inState = nodesInState(JSON.parse(r.stdout || '{}'));
    return new Set(this.inState);
  }

  async outputs(): Promise<Map<string, NodeAddress>> {
    const r = await this.run(['output', '-json', '-no-color'], undefined, this.settings.commandTimeout);
    if (r.code !== 0 || r.timedOut) throw new TerraformError(`terraform output failed: ${this.why(r)}`);
    return nodeAddresses(JSON.parse(r.stdout || '{}'));
  }

  private async applyWithRetries(): Promise<void> {
    const { retries, retryBackoff, applyTimeout } = this.settings;
    const number = ++this.applies;
    const due = () => [...this.waiters].flatMap(([id, list]) => list.filter((w) => w.after < number).map((w) => [id, w] as const));
    let lastError = 'apply failed';
    let nodeErrors = new Map<string, string>();
    for (let attempt = 0; attempt <= retries; attempt++) {
      try {
        await this.prepare();
        this.o.onProgress({ operation: 'apply', phase: 'begin', attempt: attempt + 1 });
        const stream = new ApplyStream();
        const r = await this.run(
          ['apply', '-auto-approve', '-input=false', '-json', '-lock-timeout=60s'],
          (line) => {
            const p = stream.push(line);
            if (p) this.o.onProgress({ operation: 'apply', ...p });
          },
          applyTimeout,
        );
        const report = stream.result();
        const ok = r.code === 0 && !r.timedOut;
        nodeErrors = report.errored;
        lastError = r.timedOut
          ? `terraform apply took longer than ${applyTimeout} ms and was interrupted`
          : (report.diagnostics.find((d) => d.severity === 'error' && !d.nodeId)?.summary ?? (tail(report.text.join('\n') || r.stderr) || `terraform apply exited with ${r.code}`));
        this.o.onProgress({ operation: 'apply', phase: 'end', ok, attempt: attempt + 1, ...(ok ? {} : { message: lastError }) });
        const addresses = await this.outputs().catch(() => new Map<string, NodeAddress>());
        // Settle what this apply decided: everything when it succeeded; else the nodes whose own
        // resources all finished (Terraform keeps what succeeded).
        for (const [id, w] of due()) {
          if (ok || (report.completed.has(id) && !report.errored.has(id))) this.settle(id, w, () => w.resolve(addresses.get(id) ?? {}));
        }
        if (ok) {
          this.inState = new Set(this.desired.keys());
          return;
        }
      } catch (err) {
        lastError = (err as Error).message;
      }
      if (attempt < retries && due().length > 0) {
        const inMs = retryBackoff * 2 ** attempt;
        this.o.onProgress({ operation: 'apply', phase: 'retry', attempt: attempt + 1, inMs, message: lastError });
        await sleep(inMs);
      } else break;
    }
    for (const [id, w] of due()) {
      // A create given up on leaves the desired set: later applies (for other nodes) must not try
      // it again, and the next one removes whatever part of it Terraform made.
      if (w.kind === 'create') this.desired.delete(id);
      this.settle(id, w, () => w.reject(new TerraformError(`${nodeErrors.get(id) ?? lastError} (after ${retries + 1} attempts)`)));
    }
  }

  private settle(id: string, w: Waiter, fn: () => void): void {
    const list = this.waiters.get(id);
    if (!list) return;
    const i = list.indexOf(w);
    if (i < 0) return;
    list.splice(i, 1);
    if (list.length === 0) this.waiters.delete(id);
    fn();
  }
}

function holdsResources(file: string): boolean {
  try {
    return ((JSON.parse(readFileSync(file, 'utf8')) as { resources?: unknown[] }).resources ?? []).length > 0;
  } catch {
    return true;
  }
}

function tail(text: string | undefined): string {
  const lines = (text ?? '')
    .trim()
    .split('\n')
    .filter((l) => l.trim() !== '');
  return lines.slice(-3).join(' | ').slice(0, 500);
}

/**
 * The environment Terraform runs in: the few variables the CLI needs (FIXED_ENV) and those the
 * operator lists (terraform.env, cloud credentials say), never the service's whole environment;
 * the control plane's own secrets never, even listed: the CLI, its provider plugins and whatever a
 * module's local-exec starts have no use for a key that mints admin tokens.
 */
export function terraformEnv(source: NodeJS.ProcessEnv, names: readonly string[]): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const name of [...FIXED_ENV, ...names]) {
    const value = source[name];
    if (value !== undefined && !SECRET_ENV.test(name)) out[name] = value;
  }
  return { ...out, TF_IN_AUTOMATION: '1', TF_INPUT: '0', CHECKPOINT_DISABLE: '1' };
}
