// The config after validation, as the service runs on it: the schemas' decoded forms
// (node-group-schema.ts, schema.ts: durations in milliseconds, defaults filled in), with what
// normalisation adds (node-group.ts, load.ts: defaults that depend on other fields, the
// environment's secrets, resolved paths). Derived from the schemas, so a setting is declared once.
import type { StaticDecode } from 'typebox';
import type { Admission, AdmissionWebhook, NodeGroupConfig, Platform, Region, RoleOptions, Rule, Schedule, StaticNode, TerraformSettings, Timing } from './node-group-schema.js';
import type { ConfigSchema, TerraformOperator } from './schema.js';
import type { WebhookInput } from './webhook-schema.js';

/** Some optional fields of T made required: those normalisation always fills. */
type Filled<T, K extends keyof T> = Omit<T, K> & Required<Pick<T, K>>;

export type RegionConfig = StaticDecode<typeof Region>;
export type RoleConfig = StaticDecode<typeof RoleOptions>;
/** rank, cooldown and requestBudget: the rule's own, else its role's load metric, the group's timing.cooldown, its increment. */
export type RuleConfig = Filled<StaticDecode<typeof Rule>, 'rank' | 'cooldown' | 'requestBudget'>;
export type TimingConfig = StaticDecode<typeof Timing>;
export type StaticNodeConfig = StaticDecode<typeof StaticNode>;
/** Without the settings that moved to the operator (refused, or dropped from a stored group). */
export type TerraformConfig = Omit<StaticDecode<typeof TerraformSettings>, 'binary' | 'provider' | 'providerSource'>;
export type PlatformConfig = Omit<StaticDecode<typeof Platform>, 'terraform'> & { terraform: TerraformConfig };
export type ScheduleConfig = StaticDecode<typeof Schedule>;
export type AdmissionWebhookConfig = StaticDecode<typeof AdmissionWebhook>;
export type AdmissionConfig = StaticDecode<typeof Admission>;

export type NodeGroup = Omit<StaticDecode<typeof NodeGroupConfig>, 'platform' | 'rules'> & {
  platform: PlatformConfig;
  rules: RuleConfig[];
};

/** The config file's settings decoded (the node groups are normalised on their own: NodeGroup). */
type ConfigFile = StaticDecode<typeof ConfigSchema>;

/** The operator's Terraform settings: never a node group's, never a request's. modulesDir: absolute. */
export type TerraformOperatorConfig = StaticDecode<typeof TerraformOperator>;

export type LookupRate = ConfigFile['limits']['lookups']['app'];

export type UserConfig = ConfigFile['auth']['users'][number];

export type Config = Omit<ConfigFile, 'server' | 'auth' | 'geoip' | 'defaultNodeGroup' | 'nodeGroups' | 'webhooks' | 'cluster' | 'compat'> & {
  /** The file the config came from, for messages. */
  source: string;
  server: Filled<ConfigFile['server'], 'metricsAuth'> & {
    /** From SWITCHYARD_METRICS_TOKEN: a static secret a scraper sends to /metrics (docs/observability.md). */
    metricsToken?: string;
  };
  auth: ConfigFile['auth'] & {
    /** From SWITCHYARD_ADMIN_PASSWORD; never from a file. */
    adminPassword?: string;
    /** From SWITCHYARD_JWT_SECRET. */
    jwtSecret?: string;
    /** From SWITCHYARD_JWT_PRIVATE_KEY (PEM, EC P-256): the ES256 signing key. */
    jwtPrivateKey?: string;
  };
  /** geoip.database's comma-separated files, resolved. */
  geoip: { databases?: string[]; enabled: boolean };
  defaultNodeGroup: string;
  nodeGroups: NodeGroup[];
  webhooks: WebhookInput[];
  /** Cluster mode (docs/cluster.md): absent, the service is one process and loads nothing of NATS. */
  cluster?: ClusterConfig;
  compat: { red5sm2: Red5Sm2Config };
};

/** Red5 Pro Stream Manager 2.0's API beside ours (docs/migrating-from-red5-sm2.md). */
export type Red5Sm2Config = Omit<ConfigFile['compat']['red5sm2'], 'platform'> & {
  /** The platform section of node groups created through SM2's admin API, as in a node group's config (checked when one is created). */
  platform: unknown;
};

/** cluster.nats is `servers` (SWITCHYARD_NATS_URL): the NATS servers' nats:// URLs. */
export type ClusterConfig = Omit<NonNullable<ConfigFile['cluster']>, 'nats'> & { servers: string[] };
