// The config file's schema. The same node-group schema validates the config file at start and
// the admin API's node-group bodies, so an operator meets one set of rules in both places.
import Type from 'typebox';
import { METRIC_NAME_PATTERN } from '../domain/metrics.js';
import { STRATEGY_NAMES } from '../policy/selection/registry.js';
import { DURATION_PATTERN, NAME_DESCRIPTION, NAME_PATTERN, ROLES, STATES_WITH_TIMEOUT } from '../domain/vocabulary.js';

/** A duration: milliseconds as a number, or a string such as "500ms", "10s", "5m", "1h". */
export function Duration(defaultValue?: string) {
  return Type.Union(
    [Type.Integer({ minimum: 0 }), Type.String({ pattern: DURATION_PATTERN })],
    { description: 'milliseconds, or a string such as "10s" or "5m"', ...(defaultValue === undefined ? {} : { default: defaultValue }) },
  );
}

const Name = Type.String({ pattern: NAME_PATTERN, description: NAME_DESCRIPTION });

/** A token bucket: a sustained rate and the burst it allows. */
function LookupRate(perSecond: number, burst: number) {
  return Type.Object(
    {
      perSecond: Type.Integer({ minimum: 0, maximum: 10_000_000, default: perSecond, description: 'lookups per second; 0: no limit' }),
      burst: Type.Integer({ minimum: 1, maximum: 10_000_000, default: burst }),
    },
    { additionalProperties: false, default: {} },
  );
}

export const Region = Type.Object(
  {
    name: Name,
    lat: Type.Number({ minimum: -90, maximum: 90 }),
    lon: Type.Number({ minimum: -180, maximum: 180 }),
  },
  { additionalProperties: false },
);

export const Listener = Type.Object(
  {
    protocol: Type.String({ pattern: '^[a-z][a-z0-9+.-]{0,15}$' }),
    port: Type.Integer({ minimum: 1, maximum: 65535 }),
  },
  { additionalProperties: false },
);

export const RoleOptions = Type.Object(
  {
    parentRole: Type.Optional(Type.Union(ROLES.map((r) => Type.Literal(r)))),
    /** Listeners answered when the node itself does not report them. */
    publish: Type.Optional(Listener),
    subscribe: Type.Optional(Listener),
  },
  { additionalProperties: false },
);

export const Rule = Type.Object(
  {
    region: Name,
    role: Type.Union(ROLES.map((r) => Type.Literal(r))),
    min: Type.Integer({ minimum: 0, maximum: 1024, default: 0 }),
    max: Type.Integer({ minimum: 0, maximum: 1024, default: 10 }),
    increment: Type.Integer({ minimum: 1, maximum: 1024, default: 1 }),
    /** A node's rank, from its own metrics: lower wins. Default per role: its connection count. */
    rank: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'an expression over the node\'s metrics, e.g. connections.subscriber + 100 * cpu.load' })),
    /** A node whose rank is at or above this is full: a number, or an aggregate expression. */
    limit: Type.Union([Type.Number({ exclusiveMinimum: 0 }), Type.String({ minLength: 1, maxLength: 512 })], {
      default: 200,
      description: 'a positive number, or an expression over aggregates such as avg(connections.subscriber) * 2',
    }),
    scaleOut: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'a condition, e.g. avg(connections.subscriber) > 0.6 * limit' })),
    scaleIn: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'a condition, e.g. avg(connections.subscriber) < 20' })),
    cooldown: Type.Optional(Duration()),
    /**
     * Nodes that lookups finding no room may add to this rule within one cooldown (at most one
     * increment per evaluationInterval): one client's burst of lookups must not buy a fleet.
     * Default: the rule's increment; 0: only min and the rule's conditions scale it.
     */
    requestBudget: Type.Optional(Type.Integer({ minimum: 0, maximum: 1024 })),
  },
  { additionalProperties: false },
);

const StateTimeouts = Type.Object(
  Object.fromEntries(STATES_WITH_TIMEOUT.map((s) => [s, Type.Optional(Duration())])),
  { additionalProperties: false, default: {} },
);

export const Timing = Type.Object(
  {
    heartbeatMs: Type.Integer({ minimum: 50, maximum: 600_000, default: 2000 }),
    nodeTimeout: Duration('10s'),
    faultTimeout: Duration('60s'),
    autoReinstate: Type.Boolean({ default: true }),
    streamTimeout: Duration('30s'),
    publishTimeout: Duration('60s'),
    evaluationInterval: Duration('4s'),
    cooldown: Duration('60s'),
    drainTimeout: Duration('10m'),
    faultThreshold: Type.Integer({ minimum: 0, default: 3 }),
    stateTimeouts: StateTimeouts,
  },
  { additionalProperties: false, default: {} },
);

export const StaticNode = Type.Object(
  {
    id: Name,
    role: Type.Union(ROLES.map((r) => Type.Literal(r))),
    region: Name,
    address: Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9.:_-]+$' }),
  },
  { additionalProperties: false },
);

const Settings = Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_-]{0,63}$' }), Type.Unknown(), { default: {} });

/** A node group field that moved to the operator (README.md, "The Terraform platform"): refused with where it went. */
const Moved = (where: string) => Type.Optional(Type.Unknown({ deprecated: true, description: `refused: ${where}` }));

export const TerraformSettings = Type.Object(
  {
    /** The name of an installed module (checked against the catalog, with a message that lists them). */
    module: Type.String({ minLength: 1, maxLength: 256, default: 'local', description: 'the name of an installed module: one shipped under config/terraform (aws, digitalocean, local) or one in the operator\'s terraform.modulesDir' }),
    /** Provider arguments per Switchyard region, e.g. {"us-east": {"region": "us-east-1"}}: the keys the operator allows (terraform.providerSettings), scalar values. */
    providerSettings: Type.Record(Type.String(), Settings, { default: {} }),
    /** Module variables for every region, and per region on top: declared by the module, of its types. */
    variables: Settings,
    regionVariables: Type.Record(Type.String(), Settings, { default: {} }),
    /** The URL node agents post to; default: the service's public or listening URL. */
    serviceUrl: Type.Optional(Type.String({ pattern: '^https?://[A-Za-z0-9._~:/?#@!&()*+,;=%\\[\\]-]+$', maxLength: 2048, description: 'an http:// or https:// URL without spaces, quotes, $ or backslashes' })),
    applyTimeout: Duration('20m'),
    /** `show` and `output` (read only), so that a stuck CLI cannot stall supervision; `init` has applyTimeout, as it downloads. */
    commandTimeout: Duration('2m'),
    retries: Type.Integer({ minimum: 0, maximum: 10, default: 3 }),
    retryBackoff: Duration('10s'),
    /** How long to gather requests before an apply, so that a burst becomes one apply. */
    batchWindow: Duration('1s'),
    binary: Moved('the Terraform CLI is the operator\'s: terraform.binary in the config file, or SWITCHYARD_TERRAFORM_BIN'),
    provider: Moved('the provider is the module\'s own (its required_providers), or the operator\'s choice in terraform.modules.<module>.provider'),
    providerSource: Moved('the provider\'s source is the module\'s own (its required_providers)'),
  },
  { additionalProperties: false, default: {} },
);

/** The operator's Terraform settings (the config file's top level): what runs, from where, with what. */
export const TerraformOperator = Type.Object(
  {
    /** The CLI: a program on the PATH (terraform, tofu) or an absolute path. SWITCHYARD_TERRAFORM_BIN overrides it. */
    binary: Type.String({ minLength: 1, maxLength: 4096, default: 'terraform' }),
    /** A directory of the operator's modules, one subdirectory each, named by node groups. SWITCHYARD_TERRAFORM_MODULES overrides it. */
    modulesDir: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    /** Environment variables Terraform (and what its modules run) may see, besides PATH, HOME, TMPDIR and TF_CLI_CONFIG_FILE: cloud credentials, say. */
    env: Type.Array(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$', description: 'an environment variable name' }), { maxItems: 256, default: [] }),
    /** Provider arguments a node group may set (scalars only). */
    providerSettings: Type.Array(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$', description: 'a provider argument name' }), { maxItems: 64, default: ['region'] }),
    /** Per module: variables the operator pins for every group, and which required provider is configured per region when it requires several. */
    modules: Type.Record(
      Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$' }),
      Type.Object(
        {
          provider: Type.Optional(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_-]{0,63}$' })),
          variables: Settings,
        },
        { additionalProperties: false },
      ),
      { default: {} },
    ),
  },
  { additionalProperties: false, default: {} },
);

export const Platform = Type.Object(
  {
    type: Type.Union([Type.Literal('local'), Type.Literal('static'), Type.Literal('terraform')], { default: 'local' }),
    /**
     * Whether a node's heartbeat may replace the addresses its platform knows (static config,
     * Terraform output): only for nodes behind NAT that declare SWITCHYARD_NODE_PUBLIC_ADDRESS.
     * Off, a stolen node token cannot send clients elsewhere.
     */
    trustNodeAddress: Type.Boolean({ default: false }),
    local: Type.Object(
      {
        /** What each local node runs: a simulated media server, or nginx with the RTMP module (and ffmpeg for transcoders). */
        backend: Type.Union([Type.Literal('simulated'), Type.Literal('nginx-rtmp')], {
          default: 'simulated',
          description: 'simulated (needs nothing beyond npm) or nginx-rtmp (needs nginx, libnginx-mod-rtmp and ffmpeg)',
        }),
        /** First loopback address handed to a node; the next ones count up from it. */
        firstAddress: Type.String({ pattern: '^127\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}$', default: '127.0.0.2' }),
        /** The port each local node's media listener asks for on its own address (RTMP for nginx-rtmp nodes). */
        port: Type.Integer({ minimum: 0, maximum: 65535, default: 18935 }),
        /** nginx-rtmp nodes: the HTTP port of each node's stat page, on its own address (read by its agent). */
        statPort: Type.Integer({ minimum: 1, maximum: 65535, default: 18080 }),
      },
      { additionalProperties: false, default: {} },
    ),
    static: Type.Object(
      { nodes: Type.Array(StaticNode, { maxItems: 10_000, default: [] }) },
      { additionalProperties: false, default: {} },
    ),
    terraform: TerraformSettings,
  },
  { additionalProperties: false, default: {} },
);

export const NodeGroupConfig = Type.Object(
  {
    name: Name,
    scope: Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$', default: 'live' }),
    platform: Platform,
    regions: Type.Array(Region, { minItems: 1, maxItems: 64 }),
    roles: Type.Object(
      Object.fromEntries(ROLES.map((r) => [r, Type.Optional(RoleOptions)])),
      { additionalProperties: false },
    ),
    rules: Type.Array(Rule, { maxItems: 1024, default: [] }),
    timing: Timing,
    limits: Type.Object(
      {
        /** PENDING bindings (publish lookups not yet published) the group holds: a publish lookup of a new stream past it gets 429. */
        pendingBindings: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 20_000 }),
        /** PENDING bindings one token subject (one app, one admin) may hold in the group. */
        pendingPerToken: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 2_000 }),
      },
      { additionalProperties: false, default: {} },
    ),
    selection: Type.Object(
      {
        /** two-choices: two random picks among the near-equal lightest; least-loaded: always the lightest. */
        strategy: Type.Union(
          STRATEGY_NAMES.map((n) => Type.Literal(n)),
          { default: STRATEGY_NAMES[0] },
        ),
        /** Near-equal: within this fraction of the limit of the lightest node (at least 1). */
        nearEqual: Type.Number({ minimum: 0, maximum: 1, default: 0.05 }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false },
);

const User = Type.Object(
  {
    username: Type.String({ pattern: '^[A-Za-z0-9._@-]{1,64}$' }),
    role: Type.Union([Type.Literal('admin'), Type.Literal('app')]),
    /** scrypt$N$r$p$salt$hash, as printed by `npm run hash-password`. */
    passwordHash: Type.String({ pattern: '^scrypt\\$' }),
  },
  { additionalProperties: false },
);

export const ConfigSchema = Type.Object(
  {
    server: Type.Object(
      {
        host: Type.String({ minLength: 1, default: '127.0.0.1' }),
        port: Type.Integer({ minimum: 0, maximum: 65535, default: 5080 }),
        tls: Type.Optional(
          Type.Object(
            {
              cert: Type.String({ minLength: 1 }),
              key: Type.String({ minLength: 1 }),
              port: Type.Integer({ minimum: 0, maximum: 65535, default: 443 }),
            },
            { additionalProperties: false },
          ),
        ),
        bodyLimit: Type.Integer({ minimum: 1024, maximum: 16 * 1024 * 1024, default: 65536 }),
        /** false: the TCP peer is the client. N: the N-th X-Forwarded-For hop from the right. */
        trustProxy: Type.Union([Type.Boolean(), Type.Integer({ minimum: 1, maximum: 10 })], { default: false }),
        /** Who may read /as/v1/metrics: anyone ("none") or admins. Default: "none" on a loopback bind, else "admin". */
        metricsAuth: Type.Optional(Type.Union([Type.Literal('none'), Type.Literal('admin')])),
        requestTimeout: Duration('30s'),
        headersTimeout: Duration('10s'),
        shutdownTimeout: Duration('10s'),
        /** A node channel with no message this long is closed (at least three of its group's heartbeat periods). */
        channelIdleTimeout: Duration('5m'),
        /** How other machines reach this service: the SWITCHYARD_URL of Terraform-made nodes (unless their group's platform.terraform.serviceUrl says otherwise). */
        publicUrl: Type.Optional(Type.String({ pattern: '^https?://[^\\s]+$' })),
      },
      { additionalProperties: false, default: {} },
    ),
    dataDir: Type.String({ minLength: 1, default: './data' }),
    /** "commit": acknowledged once committed (survives a process crash); "flush": once on disk. */
    durability: Type.Union([Type.Literal('commit'), Type.Literal('flush')], { default: 'commit' }),
    /** Writes are refused (503 STORE_UNAVAILABLE) while the data directory's device has fewer free bytes. */
    minFreeBytes: Type.Integer({ minimum: 0, default: 64 * 1024 * 1024 }),
    auth: Type.Object(
      {
        adminUser: Type.String({ pattern: '^[A-Za-z0-9._@-]{1,64}$', default: 'admin' }),
        /** The admin password as a scrypt hash; a plain password only ever comes from the environment. */
        adminPasswordHash: Type.Optional(Type.String({ pattern: '^scrypt\\$' })),
        tokenTtl: Duration('1h'),
        nodeTokenTtl: Duration('24h'),
        /** HS256 (a shared secret) or ES256 (a key pair; the public key is published at /as/v1/auth/jwks). */
        jwtAlgorithm: Type.Union([Type.Literal('HS256'), Type.Literal('ES256')], { default: 'HS256' }),
        users: Type.Array(User, { maxItems: 1000, default: [] }),
        loginThrottle: Type.Object(
          {
            /** Failures allowed per (user name, address) within `window` before that pair gets 429. */
            maxFailures: Type.Integer({ minimum: 1, default: 5 }),
            /** Failures allowed per address, whatever user names it tries, before the address gets 429. */
            maxAddressFailures: Type.Integer({ minimum: 1, default: 20 }),
            window: Duration('15m'),
            /** The wait after the limit doubles with each further failure, up to `maxDelay`. */
            baseDelay: Duration('1s'),
            maxDelay: Duration('15m'),
            /** A user failing from many addresses: each of its logins is held up to this long before the check, never refused. */
            userSlowdown: Duration('2s'),
          },
          { additionalProperties: false, default: {} },
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    log: Type.Object(
      { level: Type.Union(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)), { default: 'info' }) },
      { additionalProperties: false, default: {} },
    ),
    geoip: Type.Object(
      {
        /** MaxMind-format City database path(s), comma-separated; default: the bundled DB-IP City Lite. */
        database: Type.Optional(Type.String({ minLength: 1 })),
        enabled: Type.Boolean({ default: true }),
      },
      { additionalProperties: false, default: {} },
    ),
    terraform: TerraformOperator,
    defaultNodeGroup: Type.Optional(Name),
    /** How often the supervisor looks at every node (health, timeouts, min counts). */
    supervisorTick: Duration('1s'),
    nodeGroups: Type.Array(NodeGroupConfig, { maxItems: 256, default: [] }),
    limits: Type.Object(
      {
        /** Lookups per second per token subject, by role (token bucket; `perSecond: 0` = unlimited): past it, 429 with Retry-After. */
        lookups: Type.Object(
          {
            app: LookupRate(5_000, 10_000),
            admin: LookupRate(1_000, 2_000),
          },
          { additionalProperties: false, default: {} },
        ),
      },
      { additionalProperties: false, default: {} },
    ),
    metrics: Type.Object(
      {
        /** Metrics an agent of yours reports besides those of docs/nodes.md, which rules may then read. */
        custom: Type.Array(Type.String({ pattern: METRIC_NAME_PATTERN }), { maxItems: 64, uniqueItems: true, default: [] }),
        /** Nodes per group with series of their own on /as/v1/metrics (the busiest first): bounds the series a scrape carries. */
        nodeSeries: Type.Integer({ minimum: 0, maximum: 10_000, default: 500 }),
      },
      { additionalProperties: false, default: {} },
    ),
  },
  { additionalProperties: false },
);

export type NodeGroupConfigInput = Type.Static<typeof NodeGroupConfig>;
export type ConfigInput = Type.Static<typeof ConfigSchema>;
