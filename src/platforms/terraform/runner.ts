// Drives the Terraform (or OpenTofu) CLI in one working directory per node group (CONTRACT §8).
// Requests (a node to create, a node to destroy) change the desired `nodes` map; one apply at a
// time turns it into reality, and requests that arrive meanwhile go into the next apply. An apply
// that fails is retried with backoff; nodes whose resources finished are settled at once (Terraform
// never rolls back: a re-run converges). An apply that outlives its timeout is interrupted once
// (SIGINT: Terraform then stops cleanly and saves its state) and waited for.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NodeGroup } from '../../config/types.js';
import type { Role } from '../../domain/vocabulary.js';
import { ApplyStream, nodeAddresses, nodesInState, type NodeAddress, type Progress } from './messages.js';
import { readVariables, renderRoot, renderVariables, type NodeVars } from './render.js';

export interface RunnerOptions {
  dir: string;
  group: NodeGroup;
  /** The module to copy into the working directory (Terraform wants local sources to start with ./). */
  moduleDir: string;
  serviceUrl: string;
  nodeToken(nodeId: string): string;
  onProgress(event: RunnerProgress): void;
  env?: NodeJS.ProcessEnv;
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

function hashDir(dir: string): string {
  const h = createHash('sha256');
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else h.update(name).update(readFileSync(p));
    }
  };
  walk(dir);
  return h.digest('hex');
}

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

  private get binary(): string {
    return this.o.env?.SWITCHYARD_TERRAFORM_BIN ?? process.env.SWITCHYARD_TERRAFORM_BIN ?? this.settings.binary;
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

  /** Lets the current apply finish and refuses new work. */
  async close(): Promise<void> {
    this.closing = true;
    await this.cycle?.catch(() => {});
  }

  // ---- the CLI ------------------------------------------------------------------------------

  private run(args: string[], onLine?: (line: string) => void, timeoutMs?: number): Promise<{ code: number | null; stdout: string; stderr: string; timedOut: boolean }> {
    return new Promise((resolve) => {
      const child = spawn(this.binary, args, {
        cwd: this.o.dir,
        env: { ...withoutSecrets({ ...process.env, ...this.o.env }), TF_IN_AUTOMATION: '1', TF_INPUT: '0', CHECKPOINT_DISABLE: '1' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      let partial = '';
      let timedOut = false;
      const timer = timeoutMs
        ? setTimeout(() => {
            timedOut = true;
            // Once: a second interrupt makes Terraform abandon its work and can lose state.
            child.kill('SIGINT');
          }, timeoutMs)
        : undefined;
      child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
        stdout += chunk;
        if (!onLine) return;
        partial += chunk;
        let nl;
        while ((nl = partial.indexOf('\n')) >= 0) {
          onLine(partial.slice(0, nl));
          partial = partial.slice(nl + 1);
        }
      });
      child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
      const done = (code: number | null) => {
        clearTimeout(timer);
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
    const name = basename(this.o.moduleDir);
    const moduleHash = hashDir(this.o.moduleDir);
    const target = join(this.o.dir, 'modules', name);
    const root = renderRoot(this.group, `./modules/${name}`);
    const marker = join(this.o.dir, '.switchyard-init');
    const fingerprint = createHash('sha256').update(moduleHash).update(JSON.stringify({ provider: root.provider ?? null, module: root.module })).digest('hex');
    const write = (file: string, content: unknown) => {
      const tmp = join(this.o.dir, `.${file}.tmp`);
      writeFileSync(tmp, `${JSON.stringify(content, null, 2)}\n`, { mode: 0o600 });
      renameSync(tmp, join(this.o.dir, file));
    };
    if (!existsSync(marker) || readFileSync(marker, 'utf8') !== fingerprint || !existsSync(join(this.o.dir, '.terraform'))) {
      rmSync(target, { recursive: true, force: true });
      cpSync(this.o.moduleDir, target, { recursive: true });
      write(ROOT, root);
      write(VARS, renderVariables(this.desired, this.o.serviceUrl));
      this.o.onProgress({ operation: 'init', phase: 'begin' });
      const r = await this.run(['init', '-input=false', '-no-color'], undefined, this.settings.applyTimeout);
      const ok = r.code === 0 && !r.timedOut;
      const why = r.timedOut ? `took longer than ${this.settings.applyTimeout} ms and was interrupted` : tail(r.stderr || r.stdout);
      this.o.onProgress({ operation: 'init', phase: 'end', ok, ...(ok ? {} : { message: why }) });
      if (!ok) throw new TerraformError(`terraform init failed: ${why}`);
      writeFileSync(marker, fingerprint);
    }
    write(ROOT, root);
    write(VARS, renderVariables(this.desired, this.o.serviceUrl));
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

function tail(text: string | undefined): string {
  const lines = (text ?? '').trim().split('\n').filter((l) => l.trim() !== '');
  return lines.slice(-3).join(' | ').slice(0, 500);
}

/**
 * The environment Terraform runs in, less the control plane's own secrets: the CLI, its provider
 * plugins and whatever a module's local-exec starts (the local module's agents, their nginx and
 * ffmpeg) have no use for a key that mints admin tokens. Cloud credentials pass, as they must.
 */
export function withoutSecrets(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) if (!/^SWITCHYARD_(?:JWT_|ADMIN_PASSWORD)/.test(name)) out[name] = value;
  return out;
}
