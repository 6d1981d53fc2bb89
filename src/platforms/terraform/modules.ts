// The catalog of Terraform modules a node group may name: those shipped under config/terraform and
// those in the operator's modules directory (terraform.modulesDir, SWITCHYARD_TERRAFORM_MODULES),
// each read once at start with what it declares (src/policy/terraform/declarations.ts). A module is copied into a
// group's working directory only if its files still hash as they did when they were read, so what
// runs is what requests were checked against; a changed module takes effect at the next start.
//
// `.tf` files are parsed by HashiCorp's HCL parser (@cdktf/hcl2json, Go compiled to WebAssembly)
// in a worker thread that exits when done: the parser keeps about 75 MB that the service need not.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { TerraformOperatorConfig } from '../../config/types.js';
import { projectPath } from '../../paths.js';
import { declarationsOf, DeclarationError } from '../../policy/terraform/declarations.js';
import { DEFAULT_PROVIDER_SETTINGS, MODULE_NAME, operatorProblems, perRegionProvider, type ModuleInfo, type TerraformModules } from '../../policy/terraform/requests.js';
import type { ParseRequest, ParseResult } from './parse-worker.js';

export const SHIPPED_MODULES_DIR = projectPath('config', 'terraform');

/** A digest of a directory's files (names and contents, symlinks followed), to tell a changed module. */
export function hashDir(dir: string): string {
  const h = createHash('sha256');
  const walk = (d: string, prefix: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p, `${prefix}${name}/`);
      else h.update(`${prefix}${name}\0`).update(readFileSync(p)).update('\0');
    }
  };
  walk(dir, '');
  return h.digest('hex');
}

/**
 * Files already parsed in this process, by name and content: a service started again in the same
 * process (the test suite starts hundreds) does not pay for the parser's thread again.
 */
const parseCache = new Map<string, ParseResult>();
const textKey = (file: string, text: string) => createHash('sha256').update(file).update('\0').update(text).digest('hex');

export interface ModulesLoaded {
  catalog: TerraformModules;
  /** Settings of the operator's that are wrong: a ConfigError at start. */
  problems: string[];
  /** Modules that cannot be used, and directory entries that are not modules: logged. */
  warnings: string[];
}

const isDir = (p: string) => {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
};

const moduleFiles = (dir: string) =>
  readdirSync(dir)
    .filter((f) => /\.tf(\.json)?$/.test(f) && !isDir(join(dir, f)))
    .sort();

/** Module directories under `root`, by name. */
function listModules(root: string, warnings: string[]): Array<{ name: string; dir: string }> {
  const out: Array<{ name: string; dir: string }> = [];
  for (const name of readdirSync(root).sort()) {
    const dir = join(root, name);
    if (!isDir(dir)) continue;
    if (!MODULE_NAME.test(name)) {
      warnings.push(`${dir}: not a module name (letters, digits, _ and -, starting with a letter or digit): ignored`);
      continue;
    }
    if (moduleFiles(dir).length === 0) continue;
    out.push({ name, dir });
  }
  return out;
}

/** Parses `.tf` files in a worker thread; resolves with one result per request, in order. */
function parseInWorker(requests: ParseRequest[]): Promise<ParseResult[]> {
  if (requests.length === 0) return Promise.resolve([]);
  return new Promise((resolvePromise) => {
    const worker = new Worker(new URL('./parse-worker.js', import.meta.url), { workerData: requests, name: 'terraform-modules' });
    let settled = false;
    const done = (results: ParseResult[]) => {
      if (settled) return;
      settled = true;
      void worker.terminate();
      resolvePromise(results);
    };
    const failed = (why: string) => done(requests.map(() => ({ ok: false, error: `the HCL parser failed: ${why}` })));
    worker.once('message', (results: ParseResult[]) => done(results));
    worker.once('error', (err) => failed(err.message));
    worker.once('exit', (code) => failed(`its thread exited (${code})`));
  });
}

/** Reads every module a node group may name, with the operator's settings for them. */
export async function loadTerraformModules(operator: TerraformOperatorConfig, shippedDir = SHIPPED_MODULES_DIR): Promise<ModulesLoaded> {
  const problems: string[] = [];
  const warnings: string[] = [];
  const found: Array<{ name: string; dir: string; shipped: boolean }> = listModules(shippedDir, warnings).map((m) => ({ ...m, shipped: true }));
  if (operator.modulesDir !== undefined) {
    const root = resolve(operator.modulesDir);
    if (!isDir(root)) problems.push(`terraform.modulesDir = ${JSON.stringify(operator.modulesDir)}: is not a directory this service can read`);
    else {
      for (const m of listModules(root, warnings)) {
        if (found.some((s) => s.name === m.name)) problems.push(`terraform.modulesDir: module '${m.name}' (${m.dir}) has the name of a module that ships with Switchyard; give it another name`);
        else found.push({ ...m, shipped: false });
      }
    }
  }

  // Read every file first, then parse the .tf ones in one worker.
  const read = found.map((m) => {
    const hash = hashDir(m.dir);
    const files = moduleFiles(m.dir).map((file) => ({ file, text: readFileSync(join(m.dir, file), 'utf8') }));
    // Changed while being read: what was read may not be what the hash names.
    const changed = hashDir(m.dir) !== hash;
    return { ...m, hash, files, changed };
  });
  const all = read.flatMap((m) => m.files.filter((f) => f.file.endsWith('.tf')).map((f) => ({ module: m.name, file: f.file, text: f.text, key: textKey(f.file, f.text) })));
  const requests = all.filter((r) => !parseCache.has(r.key));
  const results = await parseInWorker(requests.map(({ module, file, text }) => ({ module, file, text })));
  const fresh = new Map(requests.map((r, i) => [r.key, results[i]!]));
  // Only what parsed: a failure (of the file, or of the parser's thread) is met again next time.
  for (const [key, result] of fresh) if (result.ok) parseCache.set(key, result);
  const parsed = new Map(all.map((r) => [`${r.module}/${r.file}`, fresh.get(r.key) ?? parseCache.get(r.key)!]));

  const modules: ModuleInfo[] = read.map((m) => {
    const settings = operator.modules[m.name];
    const base = { name: m.name, dir: m.dir, shipped: m.shipped, hash: m.hash, pinned: settings?.variables ?? {} };
    try {
      if (m.changed) throw new DeclarationError('its files changed while they were being read; restart the service');
      const bodies = m.files.map(({ file, text }) => {
        if (file.endsWith('.tf.json')) {
          try {
            return { file, body: JSON.parse(text) as unknown };
          } catch (err) {
            throw new DeclarationError(`${file}: ${(err as Error).message}`);
          }
        }
        const r = parsed.get(`${m.name}/${file}`)!;
        if (!r.ok) throw new DeclarationError(r.error);
        return { file, body: r.body };
      });
      const { variables, providers } = declarationsOf(bodies);
      const provider = perRegionProvider(providers, settings?.provider);
      return { ...base, variables, providers, ...(provider ? { provider } : {}) };
    } catch (err) {
      if (!(err instanceof DeclarationError)) throw err;
      warnings.push(`terraform module '${m.name}' (${m.dir}) cannot be used: ${err.message}`);
      return { ...base, variables: [], providers: [], problem: err.message };
    }
  });

  for (const [name, settings] of Object.entries(operator.modules)) {
    const module = modules.find((m) => m.name === name);
    if (!module) problems.push(`terraform.modules.${name}: names no installed module; the modules are: ${modules.map((m) => m.name).join(', ') || 'none'}`);
    else if (!module.problem) problems.push(...operatorProblems(module, settings.provider));
  }
  return { catalog: { modules, providerSettings: operator.providerSettings ?? [...DEFAULT_PROVIDER_SETTINGS] }, problems, warnings };
}
