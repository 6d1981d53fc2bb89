// Reads the config file, lays the environment over it (docs/configuration.md), validates it and turns it
// into the shape the service runs on. Any problem stops the start with every bad field named,
// with its value and what was expected. Each node group is checked by node-group.ts.
import { outboundUrlProblem } from '../policy/outbound-url.js';
import { SECRET_PLACEHOLDER } from './secrets.js';
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { ConfigSchema, type ConfigInput } from './schema.js';
import type { StaticDecode } from 'typebox';
import type { ClusterConfig, Config, NodeGroup } from './types.js';
import { readablePath, valueAt } from '../schemas/json-pointer.js';
import { compile } from '../schemas/validate.js';
import { projectPath } from '../paths.js';
import { es256KeyProblem } from './keys.js';
import { isLoopbackHost } from '../domain/hosts.js';
import { knownMetrics } from '../domain/metrics.js';
import { SECRET_ENV, terraformProblems, type TerraformModules } from '../policy/terraform/requests.js';
import { normalizeNodeGroup } from './node-group.js';
import { decoded, durationMs } from './node-group-schema.js';

export class ConfigError extends Error {
  constructor(
    readonly source: string,
    readonly problems: string[],
  ) {
    super(`invalid config (${source}):\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

const configChecker = compile<ConfigInput>(ConfigSchema);

/** Environment variables that override a config field (docs/configuration.md). */
export const ENV_FIELDS: ReadonlyArray<{ env: string; path: readonly string[]; integer?: boolean; list?: boolean }> = [
  { env: 'SWITCHYARD_HOST', path: ['server', 'host'] },
  { env: 'SWITCHYARD_PORT', path: ['server', 'port'], integer: true },
  { env: 'SWITCHYARD_DATA_DIR', path: ['dataDir'] },
  { env: 'SWITCHYARD_ADMIN_USER', path: ['auth', 'adminUser'] },
  { env: 'SWITCHYARD_GEOIP_DB', path: ['geoip', 'database'] },
  { env: 'SWITCHYARD_LOG_LEVEL', path: ['log', 'level'] },
  { env: 'SWITCHYARD_LOG_FORMAT', path: ['log', 'format'] },
  { env: 'SWITCHYARD_TERRAFORM_BIN', path: ['terraform', 'binary'] },
  { env: 'SWITCHYARD_TERRAFORM_MODULES', path: ['terraform', 'modulesDir'] },
  { env: 'SWITCHYARD_NATS_URL', path: ['cluster', 'nats'], list: true },
  { env: 'SWITCHYARD_INSTANCE_ID', path: ['cluster', 'instanceId'] },
];

export const DEFAULT_CONFIG_FILE = projectPath('config', 'default.json');

function show(value: unknown): string {
  const text = value === undefined ? 'missing' : JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** Loads the config named by SWITCHYARD_CONFIG (or the project's default) with env overrides. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const file = resolve(env.SWITCHYARD_CONFIG ?? DEFAULT_CONFIG_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(file, [`cannot read the config file: ${(err as NodeJS.ErrnoException).code ?? String(err)}`]);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(file, [`the config file is not valid JSON: ${(err as Error).message}`]);
  }
  return parseConfig(raw, file, env);
}

export function parseConfig(raw: unknown, source: string, env: NodeJS.ProcessEnv = {}): Config {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(source, ['the config must be a JSON object']);
  }
  const { input, fromEnv } = withEnvironment(raw as Record<string, unknown>, env);
  configChecker.withDefaults(input);
  if (!configChecker.check(input)) {
    const origin = (pointer: string) => (fromEnv.has(pointer) ? ` (from ${fromEnv.get(pointer)})` : '');
    throw new ConfigError(
      source,
      configChecker.explain(input).map((e) => `${e.path} = ${show(valueAt(input, e.pointer))}${origin(e.pointer)}: ${e.message}`),
    );
  }

  const problems: string[] = [];
  const groups: NodeGroup[] = [];
  input.nodeGroups.forEach((g, i) => {
    const result = normalizeNodeGroup(g, undefined, { metrics: knownMetrics(input.metrics.custom) });
    if ('errors' in result) problems.push(...result.errors.map((e) => `nodeGroups[${i}].${e.path} = ${show(valueAt(g, e.pointer))}: ${e.message}`));
    else groups.push(result.group);
  });
  const secrets = environmentSecrets(env);
  problems.push(...settingsProblems(input, secrets, env));
  if (problems.length > 0) throw new ConfigError(source, problems);

  const { adminPassword, jwtSecret, metricsToken, jwtPrivateKey } = secrets;
  const defaultNodeGroup = input.defaultNodeGroup ?? input.nodeGroups[0]?.name ?? 'default';
  // The groups are normalised above, from the file's text (their messages quote it); the SM2
  // platform stays as written, to be normalised with each group made from it.
  const { server, auth, geoip, terraform, cluster, ...settings } = decoded(ConfigSchema, structuredClone(input));
  return {
    source,
    ...settings,
    server: {
      ...server,
      ...(server.tls ? { tls: { ...server.tls, cert: resolve(server.tls.cert), key: resolve(server.tls.key) } } : {}),
      // Metrics name groups, nodes and regions: open only to this machine unless the operator says so.
      metricsAuth: server.metricsAuth ?? (isLoopbackHost(server.host) ? 'none' : 'admin'),
      ...(server.publicUrl ? { publicUrl: server.publicUrl.replace(/\/+$/, '') } : {}),
      ...(metricsToken !== undefined ? { metricsToken } : {}),
    },
    dataDir: resolve(input.dataDir),
    auth: {
      ...auth,
      ...(adminPassword !== undefined ? { adminPassword } : {}),
      ...(jwtSecret !== undefined ? { jwtSecret } : {}),
      ...(jwtPrivateKey !== undefined ? { jwtPrivateKey } : {}),
    },
    geoip: {
      enabled: geoip.enabled,
      ...(geoip.database !== undefined ? { databases: geoip.database.split(',').map((p) => resolve(p.trim())) } : {}),
    },
    terraform: { ...terraform, ...(terraform.modulesDir !== undefined ? { modulesDir: resolve(terraform.modulesDir) } : {}) },
    defaultNodeGroup,
    nodeGroups: groups,
    compat: { red5sm2: { ...settings.compat.red5sm2, platform: input.compat.red5sm2.platform } },
    ...(cluster ? { cluster: clusterSettings(cluster) } : {}),
  };
}

/** The raw config with the environment's overrides laid over it, and which variable set which field (JSON pointers). */
function withEnvironment(raw: Record<string, unknown>, env: NodeJS.ProcessEnv): { input: Record<string, unknown>; fromEnv: Map<string, string> } {
  const input = structuredClone(raw) as Record<string, unknown>;
  const fromEnv = new Map<string, string>();
  for (const field of ENV_FIELDS) {
    const value = env[field.env];
    if (value === undefined || value === '') continue;
    let node = input;
    for (const key of field.path.slice(0, -1)) {
      if (node[key] === null || typeof node[key] !== 'object') node[key] = {};
      node = node[key] as Record<string, unknown>;
    }
    node[field.path.at(-1)!] = field.list ? value.split(',').map((v) => v.trim()) : field.integer && /^[0-9]+$/.test(value) ? Number(value) : value;
    fromEnv.set(`/${field.path.join('/')}`, field.env);
  }
  // An on/off switch: anything else is left as given, for the check to refuse by name.
  const compat = env.SWITCHYARD_COMPAT_RED5SM2;
  if (compat !== undefined && compat !== '') {
    const on = /^(on|true|1)$/i.test(compat) ? true : /^(off|false|0)$/i.test(compat) ? false : compat;
    const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
    if (!isObject(input.compat)) input.compat = {};
    const section = input.compat as Record<string, unknown>;
    if (!isObject(section.red5sm2)) section.red5sm2 = {};
    (section.red5sm2 as Record<string, unknown>).enabled = on;
    fromEnv.set('/compat/red5sm2/enabled', 'SWITCHYARD_COMPAT_RED5SM2');
  }

  return { input, fromEnv };
}

/** The secrets only the environment gives, never a file (an empty variable is unset). */
function environmentSecrets(env: NodeJS.ProcessEnv) {
  return {
    adminPassword: env.SWITCHYARD_ADMIN_PASSWORD || undefined,
    jwtSecret: env.SWITCHYARD_JWT_SECRET || undefined,
    metricsToken: env.SWITCHYARD_METRICS_TOKEN || undefined,
    jwtPrivateKey: env.SWITCHYARD_JWT_PRIVATE_KEY || undefined,
  };
}

/** What the schema cannot say about the settings around the groups: unique names, references, the environment's secrets. */
function settingsProblems(input: ConfigInput, secrets: ReturnType<typeof environmentSecrets>, env: NodeJS.ProcessEnv): string[] {
  const problems: string[] = [];
  const { adminPassword, jwtSecret, metricsToken, jwtPrivateKey } = secrets;
  const names = new Set<string>();
  input.nodeGroups.forEach((g, i) => {
    if (names.has(g.name)) problems.push(`nodeGroups[${i}].name = ${show(g.name)}: another node group has this name`);
    names.add(g.name);
  });
  if (input.defaultNodeGroup !== undefined && !names.has(input.defaultNodeGroup)) {
    problems.push(`defaultNodeGroup = ${show(input.defaultNodeGroup)}: must name one of the node groups (${[...names].join(', ') || 'none'})`);
  }

  const hookIds = new Set<string>();
  input.webhooks.forEach((w, i) => {
    const why = outboundUrlProblem(w.url, { allowLinkLocal: w.allowLinkLocal });
    if (why) problems.push(`webhooks[${i}].url = ${show(w.url)}: ${why}`);
    if (w.secret === SECRET_PLACEHOLDER) problems.push(`webhooks[${i}].secret: the API's marker, not a secret; give the endpoint's secret`);
    const id = w.id ?? w.url;
    if (hookIds.has(id)) problems.push(`webhooks[${i}]: another webhook has this ${w.id ? 'id' : 'URL'} (give each an id)`);
    hookIds.add(id);
  });

  if (input.cluster && durationMs(input.cluster.leaseTtl) < 1000) {
    problems.push(`cluster.leaseTtl = ${show(input.cluster.leaseTtl)}: must be at least 1 s (renewals go every third of it)`);
  }
  if (input.cluster && durationMs(input.cluster.snapshotInterval) < 1000) {
    problems.push(`cluster.snapshotInterval = ${show(input.cluster.snapshotInterval)}: must be at least 1 s`);
  }
  if (adminPassword !== undefined && (adminPassword.length < 12 || adminPassword.length > 1024)) {
    problems.push('SWITCHYARD_ADMIN_PASSWORD = (hidden): must be 12 to 1024 characters');
  }
  if (jwtSecret !== undefined && Buffer.byteLength(jwtSecret) < 32) {
    problems.push('SWITCHYARD_JWT_SECRET = (hidden): must be at least 32 bytes');
  }
  if (metricsToken !== undefined && (metricsToken.length < 32 || metricsToken.length > 4096 || /\s/.test(metricsToken))) {
    problems.push('SWITCHYARD_METRICS_TOKEN = (hidden): must be 32 to 4096 characters without spaces');
  }
  if (jwtPrivateKey !== undefined) {
    const problem = es256KeyProblem(jwtPrivateKey);
    if (problem) problems.push(`SWITCHYARD_JWT_PRIVATE_KEY = (hidden): ${problem}`);
    else if (input.auth.jwtAlgorithm !== 'ES256')
      problems.push(`SWITCHYARD_JWT_PRIVATE_KEY = (hidden): is for ES256; set auth.jwtAlgorithm to "ES256" (it is ${JSON.stringify(input.auth.jwtAlgorithm)})`);
  }
  const usernames = new Set([input.auth.adminUser]);
  input.auth.users.forEach((u, i) => {
    if (usernames.has(u.username)) problems.push(`auth.users[${i}].username = ${show(u.username)}: another user has this name`);
    usernames.add(u.username);
  });
  const tfBinary = input.terraform.binary;
  if (!isAbsolute(tfBinary) && tfBinary.includes('/')) {
    problems.push(`terraform.binary = ${show(tfBinary)}${env.SWITCHYARD_TERRAFORM_BIN ? ' (from SWITCHYARD_TERRAFORM_BIN)' : ''}: must be a program on the PATH (terraform, tofu) or an absolute path`);
  }
  input.terraform.env.forEach((name, i) => {
    if (SECRET_ENV.test(name)) problems.push(`terraform.env[${i}] = ${show(name)}: is one of the control plane's secrets, which Terraform never gets`);
  });
  if (durationMs(input.server.channelIdleTimeout) < 1000) {
    problems.push(`server.channelIdleTimeout = ${show(input.server.channelIdleTimeout)}: must be at least 1s`);
  }
  return problems;
}

/** cluster.nats is the servers; the advertised URL without a trailing slash. */
function clusterSettings({ nats, ...cluster }: NonNullable<StaticDecode<typeof ConfigSchema>['cluster']>): ClusterConfig {
  return { servers: nats, ...cluster, ...(cluster.advertiseUrl ? { advertiseUrl: cluster.advertiseUrl.replace(/\/+$/, '') } : {}) };
}

/**
 * The config file's Terraform node groups against the installed modules (read at start, after
 * parseConfig): every problem, as a ConfigError would name it.
 */
export function terraformConfigProblems(config: Config, modules: TerraformModules): string[] {
  return config.nodeGroups.flatMap((g, i) =>
    g.platform.type !== 'terraform'
      ? []
      : terraformProblems(
          g.platform.terraform,
          g.regions.map((r) => r.name),
          modules,
        ).map((e) => `${readablePath(e.pointer, `nodeGroups[${i}]`)} = ${show(valueAt(g, e.pointer))}: ${e.message}`),
  );
}
