// The config file's schema. The same node-group schema validates the config file at start and
// the admin API's node-group bodies, so an operator meets one set of rules in both places.
import Type from 'typebox';
import { DURATION_PATTERN, NAME_PATTERN, ROLES, STATES_WITH_TIMEOUT } from '../domain/vocabulary.js';
import { MIN_FREE_FLOOR } from '../store/disk-guard.js';

/** A duration: milliseconds as a number, or a string such as "500ms", "10s", "5m", "1h". */
export function Duration(defaultValue?: string) {
  return Type.Union(
    [Type.Integer({ minimum: 0 }), Type.String({ pattern: DURATION_PATTERN })],
    { description: 'milliseconds, or a string such as "10s" or "5m"', ...(defaultValue === undefined ? {} : { default: defaultValue }) },
  );
}

const Name = Type.String({ pattern: NAME_PATTERN, description: '1–32 characters of [A-Za-z0-9._-]' });

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
      description: 'a positive number, or an expression over aggregates such as avg(memory.total) / 50',
    }),
    scaleOut: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'a condition, e.g. avg(connections.subscriber) > 0.6 * limit' })),
    scaleIn: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'a condition, e.g. avg(connections.subscriber) < 20' })),
    cooldown: Type.Optional(Duration()),
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

export const TerraformSettings = Type.Object(
  {
    /** The CLI: `terraform`, `tofu`, or a path. SWITCHYARD_TERRAFORM_BIN overrides it. */
    binary: Type.String({ minLength: 1, default: 'terraform' }),
    /** A module under config/terraform (aws, digitalocean, local) or a path to the operator's own. */
    module: Type.String({ minLength: 1, default: 'local' }),
    /** The provider the module needs one configuration of per region (e.g. aws), if any. */
    provider: Type.Optional(Type.String({ pattern: '^[a-z][a-z0-9_-]{0,31}$' })),
    /** Where Terraform finds that provider, e.g. "digitalocean/digitalocean"; default hashicorp/<provider> (digitalocean/digitalocean for digitalocean). */
    providerSource: Type.Optional(Type.String({ pattern: '^([a-z0-9.-]+/)?[a-z0-9_-]+/[a-z0-9_-]+$' })),
    /** Provider settings per Switchyard region, e.g. {"us-east": {"region": "us-east-1"}}. */
    providerSettings: Type.Record(Type.String(), Settings, { default: {} }),
    /** Module variables for every region, and per region on top. */
    variables: Settings,
    regionVariables: Type.Record(Type.String(), Settings, { default: {} }),
    /** The URL node agents post to; default: the service's public or listening URL. */
    serviceUrl: Type.Optional(Type.String({ pattern: '^https?://' })),
    applyTimeout: Duration('20m'),
    /** `show` and `output` (read only), so that a stuck CLI cannot stall supervision; `init` has applyTimeout, as it downloads. */
    commandTimeout: Duration('2m'),
    retries: Type.Integer({ minimum: 0, maximum: 10, default: 3 }),
    retryBackoff: Duration('10s'),
    /** How long to gather requests before an apply, so that a burst becomes one apply. */
    batchWindow: Duration('1s'),
  },
  { additionalProperties: false, default: {} },
);

export const Platform = Type.Object(
  {
    type: Type.Union([Type.Literal('local'), Type.Literal('static'), Type.Literal('terraform')], { default: 'local' }),
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
    selection: Type.Object(
      {
        /** two-choices: two random picks among the near-equal lightest; least-loaded: always the lightest. */
        strategy: Type.Union([Type.Literal('two-choices'), Type.Literal('least-loaded')], { default: 'two-choices' }),
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
        metricsAuth: Type.Union([Type.Literal('none'), Type.Literal('admin')], { default: 'none' }),
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
    /**
     * Writes are refused (503 STORE_UNAVAILABLE) while the data directory's device has fewer free
     * bytes. Not below 16 MiB: a smaller reserve lets a commit meet a full disk, which can abort
     * the process (see src/store/disk-guard.ts).
     */
    minFreeBytes: Type.Integer({ minimum: MIN_FREE_FLOOR, default: 64 * 1024 * 1024 }),
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
            /** Failures allowed per address and per user name within `window` before 429. */
            maxFailures: Type.Integer({ minimum: 1, default: 5 }),
            window: Duration('15m'),
            /** The wait after the limit doubles with each further failure, up to `maxDelay`. */
            baseDelay: Duration('1s'),
            maxDelay: Duration('15m'),
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
    defaultNodeGroup: Type.Optional(Name),
    /** How often the supervisor looks at every node (health, timeouts, min counts). */
    supervisorTick: Duration('1s'),
    nodeGroups: Type.Array(NodeGroupConfig, { maxItems: 256, default: [] }),
  },
  { additionalProperties: false },
);

export type NodeGroupConfigInput = Type.Static<typeof NodeGroupConfig>;
export type ConfigInput = Type.Static<typeof ConfigSchema>;
