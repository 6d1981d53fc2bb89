// Reads the config file, lays the environment over it (docs/configuration.md), validates it and turns it
// into the shape the service runs on. Any problem stops the start with every bad field named,
// with its value and what was expected. Each node group is checked by node-group.ts.
import { outboundUrlProblem } from '../policy/outbound-url.js';
import { KEPT_SECRET } from './secrets.js';
import { readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { ConfigSchema, type ConfigInput } from './schema.js';
import type { Config, NodeGroup } from './types.js';
import { compile, readablePath, valueAt, type FieldError } from '../schemas/validate.js';
import { projectPath } from '../paths.js';
import { es256KeyProblem } from './keys.js';
import { isLoopbackHost } from '../domain/hosts.js';
import { knownMetrics } from '../domain/metrics.js';
import { SECRET_ENV, terraformProblems, type TerraformModules } from '../policy/terraform/requests.js';
import { durationMs, normalizeNodeGroup } from './node-group.js';

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

  configChecker.withDefaults(input);
  const problems: string[] = [];
  const describe = (e: FieldError, root: unknown, base = '') => {
    const origin = fromEnv.get(e.pointer);
    const where = origin ? ` (from ${origin})` : '';
    return `${base}${e.path} = ${show(valueAt(root, e.pointer))}${where}: ${e.message}`;
  };
  if (!configChecker.check(input)) {
    throw new ConfigError(
      source,
      configChecker.explain(input).map((e) => describe(e, input)),
    );
  }

  const groups: NodeGroup[] = [];
  input.nodeGroups.forEach((g, i) => {
    const result = normalizeNodeGroup(g, undefined, { metrics: knownMetrics(input.metrics.custom) });
    if ('errors' in result) problems.push(...result.errors.map((e) => `nodeGroups[${i}].${e.path} = ${show(valueAt(g, e.pointer))}: ${e.message}`));
    else groups.push(result.group);
  });
  const names = new Set<string>();
  input.nodeGroups.forEach((g, i) => {
    if (names.has(g.name)) problems.push(`nodeGroups[${i}].name = ${show(g.name)}: another node group has this name`);
    names.add(g.name);
  });
  const defaultNodeGroup = input.defaultNodeGroup ?? input.nodeGroups[0]?.name ?? 'default';
  if (input.defaultNodeGroup !== undefined && !names.has(input.defaultNodeGroup)) {
    problems.push(`defaultNodeGroup = ${show(input.defaultNodeGroup)}: must name one of the node groups (${[...names].join(', ') || 'none'})`);
  }

  const hookIds = new Set<string>();
  input.webhooks.forEach((w, i) => {
    const why = outboundUrlProblem(w.url, { allowLinkLocal: w.allowLinkLocal });
    if (why) problems.push(`webhooks[${i}].url = ${show(w.url)}: ${why}`);
    if (w.secret === KEPT_SECRET) problems.push(`webhooks[${i}].secret: the API's marker, not a secret; give the endpoint's secret`);
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
  const adminPassword = env.SWITCHYARD_ADMIN_PASSWORD || undefined;
  if (adminPassword !== undefined && (adminPassword.length < 12 || adminPassword.length > 1024)) {
    problems.push('SWITCHYARD_ADMIN_PASSWORD = (hidden): must be 12 to 1024 characters');
  }
  const jwtSecret = env.SWITCHYARD_JWT_SECRET || undefined;
  if (jwtSecret !== undefined && Buffer.byteLength(jwtSecret) < 32) {
    problems.push('SWITCHYARD_JWT_SECRET = (hidden): must be at least 32 bytes');
  }
  const metricsToken = env.SWITCHYARD_METRICS_TOKEN || undefined;
  if (metricsToken !== undefined && (metricsToken.length < 32 || metricsToken.length > 4096 || /\s/.test(metricsToken))) {
    problems.push('SWITCHYARD_METRICS_TOKEN = (hidden): must be 32 to 4096 characters without spaces');
  }
  const jwtPrivateKey = env.SWITCHYARD_JWT_PRIVATE_KEY || undefined;
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
  if (problems.length > 0) throw new ConfigError(source, problems);

  const s = input.server;
  const a = input.auth;
  return {
    source,
    server: {
      host: s.host,
      port: s.port,
      ...(s.tls ? { tls: { cert: resolve(s.tls.cert), key: resolve(s.tls.key), port: s.tls.port } } : {}),
      bodyLimit: s.bodyLimit,
      trustProxy: s.trustProxy,
      // Metrics name groups, nodes and regions: open only to this machine unless the operator says so.
      metricsAuth: s.metricsAuth ?? (isLoopbackHost(s.host) ? 'none' : 'admin'),
      requestTimeout: durationMs(s.requestTimeout),
      headersTimeout: durationMs(s.headersTimeout),
      shutdownTimeout: durationMs(s.shutdownTimeout),
      channelIdleTimeout: durationMs(s.channelIdleTimeout),
      ...(s.publicUrl ? { publicUrl: s.publicUrl.replace(/\/+$/, '') } : {}),
      ...(metricsToken !== undefined ? { metricsToken } : {}),
    },
    dataDir: resolve(input.dataDir),
    durability: input.durability,
    minFreeBytes: input.minFreeBytes,
    auth: {
      adminUser: a.adminUser,
      ...(adminPassword !== undefined ? { adminPassword } : {}),
      ...(a.adminPasswordHash !== undefined ? { adminPasswordHash: a.adminPasswordHash } : {}),
      ...(jwtSecret !== undefined ? { jwtSecret } : {}),
      jwtAlgorithm: a.jwtAlgorithm,
      ...(jwtPrivateKey !== undefined ? { jwtPrivateKey } : {}),
      tokenTtl: durationMs(a.tokenTtl),
      nodeTokenTtl: durationMs(a.nodeTokenTtl),
      users: a.users,
      loginThrottle: {
        maxFailures: a.loginThrottle.maxFailures,
        maxAddressFailures: a.loginThrottle.maxAddressFailures,
        window: durationMs(a.loginThrottle.window),
        baseDelay: durationMs(a.loginThrottle.baseDelay),
        maxDelay: durationMs(a.loginThrottle.maxDelay),
        userSlowdown: durationMs(a.loginThrottle.userSlowdown),
      },
    },
    log: { level: input.log.level, format: input.log.format },
    geoip: {
      enabled: input.geoip.enabled,
      ...(input.geoip.database !== undefined ? { databases: input.geoip.database.split(',').map((p) => resolve(p.trim())) } : {}),
    },
    terraform: {
      binary: tfBinary,
      ...(input.terraform.modulesDir !== undefined ? { modulesDir: resolve(input.terraform.modulesDir) } : {}),
      env: input.terraform.env,
      providerSettings: input.terraform.providerSettings,
      modules: input.terraform.modules,
    },
    defaultNodeGroup,
    supervisorTick: durationMs(input.supervisorTick),
    nodeGroups: groups,
    webhooks: input.webhooks,
    limits: input.limits,
    compat: { red5sm2: { enabled: input.compat.red5sm2.enabled, anonymousLookups: input.compat.red5sm2.anonymousLookups, platform: input.compat.red5sm2.platform } },
    metrics: { custom: input.metrics.custom, nodeSeries: input.metrics.nodeSeries, streamSeries: input.metrics.streamSeries },
    ...(input.cluster
      ? {
          cluster: {
            servers: input.cluster.nats,
            ...(input.cluster.instanceId !== undefined ? { instanceId: input.cluster.instanceId } : {}),
            leaseTtl: durationMs(input.cluster.leaseTtl),
            snapshotEntries: input.cluster.snapshotEntries,
            snapshotInterval: durationMs(input.cluster.snapshotInterval),
            replicas: input.cluster.replicas,
            ...(input.cluster.advertiseUrl ? { advertiseUrl: input.cluster.advertiseUrl.replace(/\/+$/, '') } : {}),
          },
        }
      : {}),
  };
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
