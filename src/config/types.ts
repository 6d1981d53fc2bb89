// The config after validation: durations in milliseconds, defaults filled in, cross-references
// (regions, roles, parents) checked.
import type { ClientProtocol, LocalBackend, Role, TimedState } from '../domain/vocabulary.js';
import type { Listener } from '../domain/records.js';
import type { StrategyName } from '../policy/selection/registry.js';
import type { WebhookInput } from './webhook-schema.js';

export interface RegionConfig {
  name: string;
  lat: number;
  lon: number;
}

export interface RoleConfig {
  parentRole?: Role;
  publish?: Listener;
  subscribe?: Listener;
  /** What clients do on the role's nodes, where declared or known from the local backend (docs/webrtc.md). */
  serves?: ClientProtocol[];
}

export interface RuleConfig {
  region: string;
  role: Role;
  min: number;
  max: number;
  increment: number;
  /** A rank expression over the node's own metrics. */
  rank: string;
  /** A number, or a limit expression over the rule's aggregates. */
  limit: number | string;
  scaleOut?: string;
  scaleIn?: string;
  cooldown: number;
  /** Nodes failed lookups may add within one cooldown. */
  requestBudget: number;
}

export interface TimingConfig {
  heartbeatMs: number;
  nodeTimeout: number;
  faultTimeout: number;
  autoReinstate: boolean;
  streamTimeout: number;
  publishTimeout: number;
  evaluationInterval: number;
  cooldown: number;
  drainTimeout: number;
  faultThreshold: number;
  stateTimeouts: Record<TimedState, number>;
}

export interface StaticNodeConfig {
  id: string;
  role: Role;
  region: string;
  address: string;
}

export interface TerraformConfig {
  /** The name of an installed module (README.md, "The Terraform platform"). */
  module: string;
  providerSettings: Record<string, Record<string, unknown>>;
  variables: Record<string, unknown>;
  regionVariables: Record<string, Record<string, unknown>>;
  serviceUrl?: string;
  applyTimeout: number;
  commandTimeout: number;
  retries: number;
  retryBackoff: number;
  batchWindow: number;
}

/** The operator's Terraform settings: never a node group's, never a request's. */
export interface TerraformOperatorConfig {
  /** A program on the PATH or an absolute path (SWITCHYARD_TERRAFORM_BIN). */
  binary: string;
  /** The operator's modules, one subdirectory each (SWITCHYARD_TERRAFORM_MODULES); absolute. */
  modulesDir?: string;
  /** Names of environment variables passed to Terraform, besides a fixed few. */
  env: string[];
  /** Provider arguments a node group may set. */
  providerSettings: string[];
  modules: Record<string, { provider?: string; variables: Record<string, unknown> }>;
}

export interface PlatformConfig {
  type: 'local' | 'static' | 'terraform';
  trustNodeAddress: boolean;
  local: { backend: LocalBackend; firstAddress: string; port: number; statPort: number; janus: { subnet: string } };
  static: { nodes: StaticNodeConfig[] };
  terraform: TerraformConfig;
}

export interface ScheduleConfig {
  name: string;
  cron: string;
  /** ms */
  duration: number;
  timezone: string;
  role: Role;
  region?: string;
  min?: number;
  max?: number;
}

export interface AdmissionWebhookConfig {
  url: string;
  secret: string;
  timeout: number;
  cacheTtl: number;
  failOpen: boolean;
  allowLinkLocal: boolean;
}

export interface AdmissionConfig {
  enabled: boolean;
  tokenTtl: number;
  clockLeeway: number;
  webhook?: AdmissionWebhookConfig;
}

export interface NodeGroup {
  name: string;
  scope: string;
  platform: PlatformConfig;
  regions: RegionConfig[];
  roles: Partial<Record<Role, RoleConfig>>;
  rules: RuleConfig[];
  schedules: ScheduleConfig[];
  timing: TimingConfig;
  selection: { strategy: StrategyName; nearEqual: number };
  limits: { pendingBindings: number; pendingPerToken: number };
  admission: AdmissionConfig;
}

export interface LookupRate {
  perSecond: number;
  burst: number;
}

export interface UserConfig {
  username: string;
  role: 'admin' | 'app';
  passwordHash: string;
}

export interface Config {
  /** The file the config came from, for messages. */
  source: string;
  server: {
    host: string;
    port: number;
    tls?: { cert: string; key: string; port: number };
    bodyLimit: number;
    trustProxy: boolean | number;
    metricsAuth: 'none' | 'admin';
    /** From SWITCHYARD_METRICS_TOKEN: a static secret a scraper sends to /metrics (docs/observability.md). */
    metricsToken?: string;
    requestTimeout: number;
    headersTimeout: number;
    shutdownTimeout: number;
    channelIdleTimeout: number;
    publicUrl?: string;
  };
  dataDir: string;
  durability: 'commit' | 'flush';
  minFreeBytes: number;
  auth: {
    adminUser: string;
    /** From SWITCHYARD_ADMIN_PASSWORD; never from a file. */
    adminPassword?: string;
    adminPasswordHash?: string;
    /** From SWITCHYARD_JWT_SECRET. */
    jwtSecret?: string;
    jwtAlgorithm: 'HS256' | 'ES256';
    /** From SWITCHYARD_JWT_PRIVATE_KEY (PEM, EC P-256): the ES256 signing key. */
    jwtPrivateKey?: string;
    tokenTtl: number;
    nodeTokenTtl: number;
    users: UserConfig[];
    loginThrottle: { maxFailures: number; maxAddressFailures: number; window: number; baseDelay: number; maxDelay: number; userSlowdown: number };
  };
  log: { level: string; format: 'auto' | 'pretty' | 'json' };
  geoip: { databases?: string[]; enabled: boolean };
  terraform: TerraformOperatorConfig;
  defaultNodeGroup: string;
  supervisorTick: number;
  nodeGroups: NodeGroup[];
  webhooks: WebhookInput[];
  limits: { lookups: { app: LookupRate; admin: LookupRate; anonymous: LookupRate } };
  /** Cluster mode (docs/cluster.md): absent, the service is one process and loads nothing of NATS. */
  cluster?: ClusterConfig;
  compat: { red5sm2: Red5Sm2Config };
  /** Metrics rules may read besides the reported ones (src/domain/metrics.ts); per-node series exported per group. */
  metrics: { custom: string[]; nodeSeries: number; streamSeries: number };
}

/** Red5 Pro Stream Manager 2.0's API beside ours (docs/migrating-from-red5-sm2.md). */
export interface Red5Sm2Config {
  enabled: boolean;
  anonymousLookups: boolean;
  /** The platform section of node groups created through SM2's admin API, as in a node group's config (checked when one is created). */
  platform: unknown;
}

export interface ClusterConfig {
  /** nats:// URLs of the NATS servers (SWITCHYARD_NATS_URL). */
  servers: string[];
  /** SWITCHYARD_INSTANCE_ID; default: generated once and kept in the data directory. */
  instanceId?: string;
  leaseTtl: number;
  /** A group's owner snapshots it every this many log entries (docs/cluster.md). */
  snapshotEntries: number;
  /** …or at the first commit this long (ms) after the last snapshot. */
  snapshotInterval: number;
  replicas: 1 | 3 | 5;
  advertiseUrl?: string;
}
