// What a node group may ask of the Terraform platform, and what only the operator or Switchyard
// decides (README.md, "The Terraform platform"; config/terraform/README.md, the module contract).
// Pure: checked against the catalog of installed modules that src/platforms/terraform/modules.ts reads at start.
//
// A node group (from the config file or the admin API: the same rules) names a module by name,
// sets the variables the module declares (names and types checked), and, when the module has a
// provider configured per region, the provider arguments the operator allows (scalars). It never
// chooses an executable, a path, a provider, or shell text: the CLI and the modules directory are
// the operator's, the provider is the module's, and a module's reserved and pinned inputs are
// Switchyard's or the operator's.
import type { ModuleVariable, RequiredProvider } from './declarations.js';
import { typeToString, valueProblems } from './type-constraint.js';

/** A module's name: one path component of a modules directory, never a path. */
export const MODULE_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$';
export const MODULE_NAME = new RegExp(MODULE_NAME_PATTERN);

/** The inputs of the module contract, which Switchyard sets for every region. */
export const RESERVED_INPUTS: readonly string[] = ['nodes', 'tokens', 'service_url', 'group', 'region'];

/**
 * Inputs of shipped modules that name paths or executables on this machine: Switchyard sets them
 * (the local module's node agent, the node binary that runs it, its state directory), unless the
 * operator pins other values in `terraform.modules.<module>.variables`.
 */
export const SERVICE_PINNED: Readonly<Record<string, readonly string[]>> = { local: ['agent', 'node_binary', 'state_dir'] };

/** The control plane's own secrets: never handed to Terraform, whatever the operator lists. */
export const SECRET_ENV = /^SWITCHYARD_(?:JWT_|ADMIN_PASSWORD|METRICS_TOKEN)/;

/** What Terraform always gets of the service's environment, besides what the operator lists (terraform.env). */
export const FIXED_ENV: readonly string[] = ['PATH', 'HOME', 'TMPDIR', 'TF_CLI_CONFIG_FILE'];

/** Provider arguments a node group may set when the operator says nothing else. */
export const DEFAULT_PROVIDER_SETTINGS: readonly string[] = ['region'];

export interface ModuleInfo {
  name: string;
  /** The directory it is copied from into a group's working directory. */
  dir: string;
  /** Shipped under config/terraform, or the operator's (terraform.modulesDir). */
  shipped: boolean;
  /** The module's files as they were read (see hashDir in ./modules.ts): what runs must be what was checked. */
  hash: string;
  variables: ModuleVariable[];
  providers: RequiredProvider[];
  /** The provider configured once per Switchyard region: the module's only one, or the operator's choice. */
  provider?: RequiredProvider;
  /** Inputs the operator sets for every group of this module (terraform.modules.<name>.variables). */
  pinned: Record<string, unknown>;
  /** Why the module cannot be used (it did not parse, say); it is listed, and refused by name. */
  problem?: string;
}

export interface TerraformModules {
  modules: ModuleInfo[];
  /** Provider arguments a node group may set (terraform.providerSettings). */
  providerSettings: string[];
}

/** The settings of a node group that this policy looks at (its platform.terraform). */
export interface GroupTerraform {
  module: string;
  providerSettings: Record<string, Record<string, unknown>>;
  variables: Record<string, unknown>;
  regionVariables: Record<string, Record<string, unknown>>;
}

export interface PolicyProblem {
  /** JSON pointer under the node group, e.g. /platform/terraform/variables/node_binary */
  pointer: string;
  message: string;
}

export const moduleNamed = (catalog: TerraformModules, name: string): ModuleInfo | undefined => catalog.modules.find((m) => m.name === name);

/** The inputs a node group may not set, with who sets them. */
export function lockedInputs(module: ModuleInfo): Map<string, string> {
  const locked = new Map<string, string>();
  for (const name of RESERVED_INPUTS) locked.set(name, 'is set by Switchyard (the module contract)');
  if (module.shipped)
    for (const name of SERVICE_PINNED[module.name] ?? [])
      locked.set(name, `is a path or program on the control plane's machine: Switchyard sets it, or the operator pins it (terraform.modules.${module.name}.variables)`);
  for (const name of Object.keys(module.pinned)) locked.set(name, `is pinned by the operator (terraform.modules.${module.name}.variables)`);
  return locked;
}

const pointerOf = (parts: ReadonlyArray<string | number>) => parts.map((p) => `/${String(p).replace(/~/g, '~0').replace(/\//g, '~1')}`).join('');
const list = (names: readonly string[]) => (names.length === 0 ? 'none' : names.join(', '));

/**
 * A provider argument's value: a scalar, and a string only of letters, digits, '.', '_' and '-'.
 * Providers build host names from such arguments (AWS: ec2.<region>.amazonaws.com), and a
 * '/', ':', '@' or '?' in one would send the provider's signed requests to another host.
 */
const PROVIDER_STRING = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
function providerValueProblem(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return undefined;
  if (typeof value === 'boolean') return undefined;
  if (typeof value === 'string') return PROVIDER_STRING.test(value) ? undefined : "must be 1 to 128 letters, digits, '.', '_' or '-' (a provider builds host names from it)";
  return 'must be a string, a number or a boolean';
}

/** Provider-block arguments that are Terraform's or Switchyard's, whatever the operator allows. */
const PROVIDER_META: readonly string[] = ['alias', 'version'];

/**
 * Everything wrong with a node group's Terraform settings against the installed modules: an
 * unknown module (naming those that exist), variables it does not declare (naming those it does),
 * values of the wrong type, reserved and pinned inputs, required inputs nobody sets, provider
 * arguments the operator does not allow. Empty when the group may run.
 */
export function terraformProblems(tf: GroupTerraform, regions: readonly string[], catalog: TerraformModules): PolicyProblem[] {
  const out: PolicyProblem[] = [];
  const at = (parts: ReadonlyArray<string | number>, message: string) => out.push({ pointer: pointerOf(['platform', 'terraform', ...parts]), message });
  const module = moduleNamed(catalog, tf.module);
  if (!module) {
    at(['module'], `names no installed module; the modules are: ${list(catalog.modules.map((m) => m.name))}`);
    return out;
  }
  if (module.problem) {
    at(['module'], `cannot be used: ${module.problem}`);
    return out;
  }
  const declared = new Map(module.variables.map((v) => [v.name, v]));
  const locked = lockedInputs(module);
  const settable = module.variables
    .map((v) => v.name)
    .filter((n) => !locked.has(n))
    .sort();
  const checkVariables = (values: Record<string, unknown>, where: ReadonlyArray<string>) => {
    for (const [name, value] of Object.entries(values)) {
      const v = declared.get(name);
      const why = locked.get(name);
      if (why) at([...where, name], why);
      else if (!v) at([...where, name], `is not a variable of module '${module.name}'; it declares: ${list(settable)}`);
      else if (value === null) {
        if (!v.nullable) at([...where, name], 'must not be null');
      } else {
        for (const p of valueProblems(v.type, value)) at([...where, name, ...p.at], `${p.message}${p.at.length > 0 ? '' : ` (the module declares ${typeToString(v.type)})`}`);
      }
    }
  };
  checkVariables(tf.variables, ['variables']);
  for (const [region, values] of Object.entries(tf.regionVariables)) checkVariables(values, ['regionVariables', region]);
  // Required inputs that nobody sets would fail every apply: say so now, per region.
  for (const v of module.variables) {
    if (!v.required || locked.has(v.name) || Object.hasOwn(tf.variables, v.name)) continue;
    const missing = regions.filter((r) => !Object.hasOwn(tf.regionVariables[r] ?? {}, v.name));
    if (missing.length > 0) at(['variables', v.name], `is required by module '${module.name}' (${typeToString(v.type)}); set it in variables or in regionVariables of ${missing.join(', ')}`);
  }

  const allowed = new Set(catalog.providerSettings);
  for (const [region, settings] of Object.entries(tf.providerSettings)) {
    if (!module.provider) {
      at(
        ['providerSettings', region],
        `module '${module.name}' has no provider configured per region${module.providers.length > 1 ? ` (it requires ${module.providers.map((p) => p.name).join(', ')}; the operator chooses one in terraform.modules.${module.name}.provider)` : ''}`,
      );
      continue;
    }
    for (const [key, value] of Object.entries(settings)) {
      if (PROVIDER_META.includes(key)) at(['providerSettings', region, key], "is set by Switchyard (the provider's alias is the region)");
      else if (!allowed.has(key)) at(['providerSettings', region, key], `is not a provider setting a node group may set; the operator allows: ${list([...allowed])} (terraform.providerSettings)`);
      else {
        const problem = providerValueProblem(value);
        if (problem) at(['providerSettings', region, key], problem);
      }
    }
  }
  return out;
}

/**
 * The operator's own settings for a module, checked like a node group's variables (declared,
 * typed, not reserved): problems as messages for a ConfigError.
 */
export function operatorProblems(module: ModuleInfo, provider: string | undefined): string[] {
  const out: string[] = [];
  const where = `terraform.modules.${module.name}`;
  const declared = new Map(module.variables.map((v) => [v.name, v]));
  for (const [name, value] of Object.entries(module.pinned)) {
    const v = declared.get(name);
    if (RESERVED_INPUTS.includes(name)) out.push(`${where}.variables.${name}: is set by Switchyard (the module contract)`);
    else if (!v) out.push(`${where}.variables.${name}: is not a variable of module '${module.name}'; it declares: ${list(module.variables.map((d) => d.name))}`);
    else if (value === null ? !v.nullable : false) out.push(`${where}.variables.${name}: must not be null`);
    else if (value !== null) for (const p of valueProblems(v.type, value)) out.push(`${where}.variables.${[name, ...p.at].join('.')}: ${p.message}`);
  }
  if (provider !== undefined && !module.providers.some((p) => p.name === provider)) {
    out.push(`${where}.provider = ${JSON.stringify(provider)}: module '${module.name}' requires no such provider; it requires: ${list(module.providers.map((p) => p.name))}`);
  }
  return out;
}

/** The provider a module has configured per region: its only one, or the one the operator names. */
export function perRegionProvider(providers: readonly RequiredProvider[], chosen: string | undefined): RequiredProvider | undefined {
  if (chosen !== undefined) return providers.find((p) => p.name === chosen);
  return providers.length === 1 ? providers[0] : undefined;
}
