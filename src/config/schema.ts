// The config file's schema. The same node-group schema validates the config file at start and
// the admin API's node-group bodies, so an operator meets one set of rules in both places.
import Type, { type TSchema } from 'typebox';
import { METRIC_NAME_PATTERN } from '../domain/metrics.js';
import { STRATEGY_NAMES } from '../policy/selection/registry.js';
import { DEFAULT_STATE_TIMEOUTS, DURATION_PATTERN, NAME_DESCRIPTION, NAME_PATTERN, ROLES, STATES_WITH_TIMEOUT } from '../domain/vocabulary.js';
import { MIN_FREE_FLOOR } from '../store/disk-guard.js';

/**
 * A schema with prose for the docs (the configuration reference, the OpenAPI document), keeping
 * the noun phrase a validation error says was expected (`x-expected`, read by src/schemas/validate.ts).
 */
export function described<T extends TSchema>(schema: T, text: string): T {
  const s = schema as TSchema & { description?: string; 'x-expected'?: string };
  const expected = s['x-expected'] ?? s.description;
  // A copy with every own property, TypeBox's non-enumerable kind markers included (a spread would drop them).
  const copy = Object.defineProperties({}, Object.getOwnPropertyDescriptors(schema)) as T & { description?: string; 'x-expected'?: string };
  if (expected !== undefined) copy['x-expected'] = expected;
  copy.description = text;
  return copy;
}

const DURATION_WORDS = 'milliseconds, or a string such as "10s" or "5m"';

/** A duration: milliseconds as a number, or a string such as "500ms", "10s", "5m", "1h". */
export function Duration(defaultValue?: string) {
  return Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: DURATION_PATTERN })], {
    description: DURATION_WORDS,
    'x-expected': DURATION_WORDS,
    ...(defaultValue === undefined ? {} : { default: defaultValue }),
  });
}

const Name = Type.String({ pattern: NAME_PATTERN, description: NAME_DESCRIPTION, 'x-expected': NAME_DESCRIPTION });

/** A token bucket: a sustained rate and the burst it allows. */
function LookupRate(perSecond: number, burst: number) {
  return Type.Object(
    {
      perSecond: Type.Integer({ minimum: 0, maximum: 10_000_000, default: perSecond, description: 'lookups per second, sustained; 0: no limit' }),
      burst: Type.Integer({ minimum: 1, maximum: 10_000_000, default: burst, description: 'lookups allowed at once above the sustained rate' }),
    },
    { additionalProperties: false, default: {} },
  );
}

export const Region = Type.Object(
  {
    name: Name,
    lat: Type.Number({ minimum: -90, maximum: 90, description: 'latitude, for geo routing (degrees)' }),
    lon: Type.Number({ minimum: -180, maximum: 180, description: 'longitude, for geo routing (degrees)' }),
  },
  { additionalProperties: false },
);

export const Listener = Type.Object(
  {
    protocol: Type.String({ pattern: '^[a-z][a-z0-9+.-]{0,15}$', description: 'a URL scheme such as rtmp, wss or http' }),
    port: Type.Integer({ minimum: 1, maximum: 65535, description: 'TCP port' }),
  },
  { additionalProperties: false, description: 'where clients connect: a protocol and a port' },
);

export const RoleOptions = Type.Object(
  {
    parentRole: Type.Optional(
      Type.Union(
        ROLES.map((r) => Type.Literal(r)),
        { description: 'the role an edge or relay pulls from: origin (an edge or a relay) or relay (an edge)' },
      ),
    ),
    publish: Type.Optional(described(Listener, 'the publish listener answered (endpoint 4) when a node does not report its own')),
    subscribe: Type.Optional(described(Listener, 'the playback listener answered (endpoint 5) when a node does not report its own')),
  },
  { additionalProperties: false },
);

export const Rule = Type.Object(
  {
    region: described(Name, "one of the group's regions"),
    role: Type.Union(
      ROLES.map((r) => Type.Literal(r)),
      { description: 'origin, edge, relay or transcoder' },
    ),
    min: Type.Integer({ minimum: 0, maximum: 1024, default: 0, description: 'nodes kept at least (replacements start at once below it)' }),
    max: Type.Integer({ minimum: 0, maximum: 1024, default: 10, description: 'nodes at most (nodes being created and draining count; FAULT nodes do not)' }),
    increment: Type.Integer({ minimum: 1, maximum: 1024, default: 1, description: 'nodes a scale-out adds' }),
    rank: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 512,
        description: "an expression over the node's metrics, e.g. connections.subscriber + 100 * cpu.load (default: the role's connection count); lower wins",
      }),
    ),
    limit: Type.Union([Type.Number({ exclusiveMinimum: 0 }), Type.String({ minLength: 1, maxLength: 512 })], {
      default: 200,
      description: 'a positive number, or an expression over aggregates such as 300 - 200 * avg(cpu.load)',
    }),
    scaleOut: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'a condition over aggregates that adds increment nodes, e.g. avg(connections.subscriber) > 0.6 * limit' })),
    scaleIn: Type.Optional(Type.String({ minLength: 1, maxLength: 512, description: 'a condition over aggregates that drains one node, e.g. avg(connections.subscriber) < 20' })),
    cooldown: Type.Optional(described(Duration(), 'the rest after a scale-out or scale-in (default: timing.cooldown)')),
    requestBudget: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1024,
        description:
          "nodes that lookups finding no room may add within one cooldown, at most one increment per evaluationInterval (default: the rule's increment; 0: only min and the conditions scale it)",
      }),
    ),
  },
  { additionalProperties: false },
);

const StateTimeouts = Type.Object(
  Object.fromEntries(STATES_WITH_TIMEOUT.map((s) => [s, Type.Optional(described(Duration(), `how long a node may stay ${s} (default ${DEFAULT_STATE_TIMEOUTS[s] / 1000} s)`))])),
  { additionalProperties: false, default: {}, description: 'per-state timeouts; overstaying one is a FAULT (a destroy is asked for again)' },
);

export const Timing = Type.Object(
  {
    heartbeatMs: Type.Integer({ minimum: 50, maximum: 600_000, default: 2000, description: 'how often node agents report (told in every reply), in milliseconds' }),
    nodeTimeout: described(Duration('10s'), 'silence after which a node goes FAULT'),
    faultTimeout: described(Duration('60s'), 'how long a FAULT node may stay before it is destroyed'),
    autoReinstate: Type.Boolean({ default: true, description: 'a FAULT node whose heartbeats come back returns to service (or to its drain)' }),
    streamTimeout: described(Duration('30s'), 'a LIVE stream its origin stops listing is unbound after this'),
    publishTimeout: described(Duration('60s'), 'a PENDING stream never published is unbound after this'),
    evaluationInterval: described(Duration('4s'), "how often the rules' scaleOut and scaleIn are evaluated"),
    cooldown: described(Duration('60s'), 'the rest after a scale-out or scale-in, for rules that do not say'),
    drainTimeout: described(Duration('10m'), 'a draining node is destroyed after this even if not empty (through HARD_SUNSET)'),
    faultThreshold: Type.Integer({ minimum: 0, default: 3, description: 'more FAULT nodes than this in a region and role stop scaling there' }),
    stateTimeouts: StateTimeouts,
  },
  { additionalProperties: false, default: {}, description: 'how fast things happen to its nodes and streams' },
);

export const StaticNode = Type.Object(
  {
    id: described(Name, `the node's id: ${NAME_DESCRIPTION}`),
    role: Type.Union(
      ROLES.map((r) => Type.Literal(r)),
      { description: 'origin, edge, relay or transcoder' },
    ),
    region: described(Name, "one of the group's regions"),
    address: Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9.:_-]+$', description: 'a host name or IP address clients connect to' }),
  },
  { additionalProperties: false },
);

const Settings = Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_-]{0,63}$' }), Type.Unknown(), { default: {}, description: 'name → value' });

/** A node group field that moved to the operator (README.md, "The Terraform platform"): refused with where it went. */
const Moved = (where: string) => Type.Optional(Type.Unknown({ deprecated: true, description: `refused: ${where}` }));

export const TerraformSettings = Type.Object(
  {
    module: Type.String({
      minLength: 1,
      maxLength: 256,
      default: 'local',
      description: "the name of an installed module: one shipped under config/terraform (aws, digitalocean, local) or one in the operator's terraform.modulesDir",
    }),
    providerSettings: Type.Record(Type.String(), Settings, {
      default: {},
      description: 'provider arguments per region, e.g. {"us-east": {"region": "us-east-1"}}: only the keys the operator allows (terraform.providerSettings), scalar values',
    }),
    variables: described(Settings, 'module variables for every region: only those the module declares, of its types'),
    regionVariables: Type.Record(Type.String(), Settings, { default: {}, description: 'module variables per region, on top of variables' }),
    serviceUrl: Type.Optional(
      Type.String({ pattern: '^https?://[A-Za-z0-9._~:/?#@!&()*+,;=%\\[\\]-]+$', maxLength: 2048, description: 'an http:// or https:// URL without spaces, quotes, $ or backslashes' }),
    ),
    applyTimeout: described(Duration('20m'), 'an apply (or an init) that outlives it is interrupted once and waited for'),
    commandTimeout: described(Duration('2m'), 'the same for show and output (read only), so that a stuck CLI cannot stall supervision'),
    retries: Type.Integer({ minimum: 0, maximum: 10, default: 3, description: 'a failed apply is retried this many times' }),
    retryBackoff: described(Duration('10s'), 'the wait before the first retry, doubling after each'),
    batchWindow: described(Duration('1s'), 'requests are gathered this long before an apply, so that a burst becomes one apply'),
    binary: Moved("the Terraform CLI is the operator's: terraform.binary in the config file, or SWITCHYARD_TERRAFORM_BIN"),
    provider: Moved("the provider is the module's own (its required_providers), or the operator's choice in terraform.modules.<module>.provider"),
    providerSource: Moved("the provider's source is the module's own (its required_providers)"),
  },
  { additionalProperties: false, default: {}, description: 'the terraform platform: which installed module, with what variables (docs/terraform.md)' },
);

/** The operator's Terraform settings (the config file's top level): what runs, from where, with what. */
export const TerraformOperator = Type.Object(
  {
    binary: Type.String({ minLength: 1, maxLength: 4096, default: 'terraform', description: 'the CLI: a program on the PATH (terraform, tofu) or an absolute path' }),
    modulesDir: Type.Optional(Type.String({ minLength: 1, maxLength: 4096, description: "a directory of the operator's modules, one subdirectory each, named by node groups" })),
    env: Type.Array(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,127}$', description: 'an environment variable name' }), {
      maxItems: 256,
      default: [],
      description: 'environment variables Terraform (and what its modules run) may see, besides PATH, HOME, TMPDIR and TF_CLI_CONFIG_FILE: cloud credentials, say',
    }),
    providerSettings: Type.Array(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$', description: 'a provider argument name' }), {
      maxItems: 64,
      default: ['region'],
      description: 'provider arguments a node group may set (scalars only)',
    }),
    modules: Type.Record(
      Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$' }),
      Type.Object(
        {
          provider: Type.Optional(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_-]{0,63}$', description: 'the required provider configured per region, when the module requires several' })),
          variables: described(Settings, 'variables the operator pins for every group using the module'),
        },
        { additionalProperties: false },
      ),
      { default: {}, description: 'per module: pinned variables, and its provider' },
    ),
  },
  { additionalProperties: false, default: {}, description: "the operator's Terraform settings: what runs, from where, with what (never a node group's)" },
);

export const Platform = Type.Object(
  {
    type: Type.Union([Type.Literal('local'), Type.Literal('static'), Type.Literal('terraform')], {
      default: 'local',
      description: 'local (node agents on this machine), static (a fixed fleet) or terraform (real clouds)',
    }),
    trustNodeAddress: Type.Boolean({
      default: false,
      description:
        "whether a node's heartbeat may replace the addresses its platform knows (static config, Terraform output): only for nodes behind NAT that declare SWITCHYARD_NODE_PUBLIC_ADDRESS; off, a stolen node token cannot send clients elsewhere",
    }),
    local: Type.Object(
      {
        backend: Type.Union([Type.Literal('simulated'), Type.Literal('nginx-rtmp')], {
          default: 'simulated',
          description: 'simulated (needs nothing beyond npm) or nginx-rtmp (needs nginx, libnginx-mod-rtmp and ffmpeg)',
        }),
        firstAddress: Type.String({
          pattern: '^127\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}$',
          default: '127.0.0.2',
          description: 'a loopback address 127.x.y.z: the first one handed to a node; the next ones count up from it',
        }),
        port: Type.Integer({ minimum: 0, maximum: 65535, default: 18935, description: "the port each local node's media listener asks for on its own address (RTMP for nginx-rtmp nodes)" }),
        statPort: Type.Integer({ minimum: 1, maximum: 65535, default: 18080, description: "nginx-rtmp nodes: the HTTP port of each node's stat page, on its own address (read by its agent)" }),
      },
      { additionalProperties: false, default: {}, description: 'the local platform: node agents on this machine' },
    ),
    static: Type.Object(
      { nodes: Type.Array(StaticNode, { maxItems: 10_000, default: [], description: "the fleet's nodes" }) },
      { additionalProperties: false, default: {}, description: 'the static platform: a fixed fleet the operator runs' },
    ),
    terraform: TerraformSettings,
  },
  { additionalProperties: false, default: {}, description: 'where its nodes come from (docs/nodes.md, Platforms)' },
);

export const NodeGroupConfig = Type.Object(
  {
    name: described(Name, `the node group's name (the {nodeGroup} of the API's paths): ${NAME_DESCRIPTION}`),
    scope: Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$', default: 'live', description: 'the application scope of its streams: 1–64 characters of [A-Za-z0-9._-]' }),
    platform: Platform,
    regions: Type.Array(Region, { minItems: 1, maxItems: 64, description: 'where its nodes run, in the order tried when a client has no location' }),
    roles: Type.Object(Object.fromEntries(ROLES.map((r) => [r, Type.Optional(RoleOptions)])), {
      additionalProperties: false,
      description: 'the roles it has (origin, edge, relay, transcoder), each with its options; edges and relays name the role they pull from',
    }),
    rules: Type.Array(Rule, { maxItems: 1024, default: [], description: 'one per region and role: how many nodes, and when to scale (docs/scaling.md)' }),
    timing: Timing,
    limits: Type.Object(
      {
        pendingBindings: Type.Integer({
          minimum: 1,
          maximum: 10_000_000,
          default: 20_000,
          description: 'streams looked up and not yet published the group holds: a publish lookup of a new stream past it gets 429, not a node',
        }),
        pendingPerToken: Type.Integer({ minimum: 1, maximum: 10_000_000, default: 2_000, description: 'the same, per token subject (one app, one admin)' }),
      },
      { additionalProperties: false, default: {}, description: 'what one client may hold' },
    ),
    selection: Type.Object(
      {
        strategy: Type.Union(
          STRATEGY_NAMES.map((n) => Type.Literal(n)),
          { default: STRATEGY_NAMES[0], description: `${STRATEGY_NAMES.join(' or ')}: two random picks among the near-equal lightest nodes, or always the lightest` },
        ),
        nearEqual: Type.Number({ minimum: 0, maximum: 1, default: 0.05, description: "near-equal: within this fraction of the lightest node's limit (at least one connection)" }),
      },
      { additionalProperties: false, default: {}, description: 'how a node is chosen among those with room (docs/choosing-nodes.md)' },
    ),
  },
  { additionalProperties: false },
);

const User = Type.Object(
  {
    username: Type.String({ pattern: '^[A-Za-z0-9._@-]{1,64}$', description: '1–64 characters of [A-Za-z0-9._@-]' }),
    role: Type.Union([Type.Literal('admin'), Type.Literal('app')], { description: 'admin (everything) or app (stream lookups only)' }),
    passwordHash: Type.String({ pattern: '^scrypt\\$', description: 'a scrypt hash (scrypt$N$r$p$salt$hash), as printed by npm run hash-password' }),
  },
  { additionalProperties: false },
);

export const ConfigSchema = Type.Object(
  {
    server: Type.Object(
      {
        host: Type.String({ minLength: 1, default: '127.0.0.1', description: 'the address to listen on (127.0.0.1: this machine only; 0.0.0.0: every interface)' }),
        port: Type.Integer({ minimum: 0, maximum: 65535, default: 5080, description: 'the HTTP port (0: any free one)' }),
        tls: Type.Optional(
          Type.Object(
            {
              cert: Type.String({ minLength: 1, description: 'the certificate chain, a PEM file' }),
              key: Type.String({ minLength: 1, description: 'its private key, a PEM file' }),
              port: Type.Integer({ minimum: 0, maximum: 65535, default: 443, description: 'the HTTPS port' }),
            },
            { additionalProperties: false, description: 'HTTPS beside HTTP' },
          ),
        ),
        bodyLimit: Type.Integer({ minimum: 1024, maximum: 16 * 1024 * 1024, default: 65536, description: 'the largest request body, in bytes (413 past it)' }),
        trustProxy: Type.Union([Type.Boolean(), Type.Integer({ minimum: 1, maximum: 10 })], {
          default: false,
          description: 'false (the TCP peer is the client), true or a number N (the N-th X-Forwarded-For hop from the right is)',
        }),
        metricsAuth: Type.Optional(
          Type.Union([Type.Literal('none'), Type.Literal('admin')], { description: 'none (anyone may read /as/v1/metrics) or admin; default: none on a loopback bind, else admin' }),
        ),
        requestTimeout: described(Duration('30s'), 'a request whose body has not arrived by then gets 408'),
        headersTimeout: described(Duration('10s'), 'a request whose headers (or a TLS handshake) have not arrived by then gets 408'),
        shutdownTimeout: described(Duration('10s'), 'how long a stopping service waits for requests in flight'),
        channelIdleTimeout: described(Duration('5m'), "a node channel with no message this long is closed (never less than three of its group's heartbeat periods; at least 1 s)"),
        publicUrl: Type.Optional(
          Type.String({
            pattern: '^https?://[^\\s]+$',
            description: "an http:// or https:// URL: how other machines reach this service (Terraform-made nodes' SWITCHYARD_URL, unless their group's platform.terraform.serviceUrl says otherwise)",
          }),
        ),
      },
      { additionalProperties: false, default: {}, description: 'HTTP and HTTPS' },
    ),
    dataDir: Type.String({ minLength: 1, default: './data', description: 'the data directory: LMDB, node logs, Terraform working directories (made private: 0700)' }),
    durability: Type.Union([Type.Literal('commit'), Type.Literal('flush')], {
      default: 'commit',
      description: 'commit (an acknowledged write survives a crash of the process) or flush (it also survives a power loss)',
    }),
    minFreeBytes: Type.Integer({
      minimum: MIN_FREE_FLOOR,
      default: 64 * 1024 * 1024,
      description:
        "writes are refused (503 STORE_UNAVAILABLE) while the data directory's device has fewer free bytes: no writes at all on a disk smaller than this; at least 16 MiB (with less, lmdb can abort the process on a full disk)",
    }),
    auth: Type.Object(
      {
        adminUser: Type.String({ pattern: '^[A-Za-z0-9._@-]{1,64}$', default: 'admin', description: "the admin's user name: 1–64 characters of [A-Za-z0-9._@-]" }),
        adminPasswordHash: Type.Optional(
          Type.String({ pattern: '^scrypt\\$', description: "the admin's password as a scrypt hash (npm run hash-password); a plain password only ever comes from the environment" }),
        ),
        tokenTtl: described(Duration('1h'), "a user token's lifetime"),
        nodeTokenTtl: described(Duration('24h'), "a node token's lifetime (renewed in heartbeat replies past half of it)"),
        jwtAlgorithm: Type.Union([Type.Literal('HS256'), Type.Literal('ES256')], {
          default: 'HS256',
          description: 'HS256 (a shared secret) or ES256 (a key pair; the public key is published at /as/v1/auth/jwks)',
        }),
        users: Type.Array(User, { maxItems: 1000, default: [], description: 'further users: app back ends (stream lookups only) or more admins' }),
        loginThrottle: Type.Object(
          {
            maxFailures: Type.Integer({ minimum: 1, default: 5, description: 'failures allowed per (user name, address) within window before that pair gets 429' }),
            maxAddressFailures: Type.Integer({ minimum: 1, default: 20, description: 'failures allowed per address, whatever user names it tries, before the address gets 429' }),
            window: described(Duration('15m'), 'failures older than this are forgotten'),
            baseDelay: described(Duration('1s'), 'the wait after the limit, doubling with each further failure'),
            maxDelay: described(Duration('15m'), 'the longest wait'),
            userSlowdown: described(Duration('2s'), 'a user failing from many addresses: each of its logins is held up to this long, never refused'),
          },
          { additionalProperties: false, default: {}, description: 'failed logins (docs/security.md)' },
        ),
      },
      { additionalProperties: false, default: {}, description: 'users and tokens' },
    ),
    log: Type.Object(
      {
        level: Type.Union(
          ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
          {
            default: 'info',
            description: 'fatal, error, warn, info, debug, trace or silent',
          },
        ),
      },
      { additionalProperties: false, default: {}, description: 'JSON logs on stdout (pino)' },
    ),
    geoip: Type.Object(
      {
        database: Type.Optional(Type.String({ minLength: 1, description: 'MaxMind-format City database file(s), comma-separated (default: the bundled DB-IP City Lite)' })),
        enabled: Type.Boolean({ default: true, description: 'locate clients by address, to try their nearest region first' }),
      },
      { additionalProperties: false, default: {}, description: 'geo routing' },
    ),
    terraform: TerraformOperator,
    defaultNodeGroup: Type.Optional(described(Name, 'the group of lookups that name none (endpoints 4 and 5; default: the first)')),
    supervisorTick: described(Duration('1s'), 'how often the supervisor looks at every node (health, timeouts, min counts)'),
    nodeGroups: Type.Array(NodeGroupConfig, { maxItems: 256, default: [], description: 'node groups the config file defines (the API can add more)' }),
    limits: Type.Object(
      {
        lookups: Type.Object(
          {
            app: described(LookupRate(5_000, 10_000), 'app tokens'),
            admin: described(LookupRate(1_000, 2_000), 'admin tokens'),
            anonymous: described(LookupRate(50, 500), 'lookups without a token (compat.red5sm2.anonymousLookups), per client address (an IPv6 /64)'),
          },
          { additionalProperties: false, default: {}, description: 'lookups per second per token subject, by role (a token bucket): past it, 429 with Retry-After' },
        ),
      },
      { additionalProperties: false, default: {}, description: 'what one client may use' },
    ),
    cluster: Type.Optional(
      Type.Object(
        {
          nats: Type.Array(Type.String({ pattern: '^nats://[A-Za-z0-9.\\[\\]:_-]{1,253}(:[0-9]{1,5})?$', description: 'a nats:// URL: host and port' }), {
            minItems: 1,
            maxItems: 32,
            description: 'the NATS servers (JetStream enabled), any of them: instances find each other through NATS (the environment variable takes a comma-separated list)',
          }),
          instanceId: Type.Optional(
            Type.String({
              pattern: '^[A-Za-z0-9_-]{1,64}$',
              description: "this instance's name in the cluster: 1–64 characters of [A-Za-z0-9_-]; default: generated once and kept in the data directory",
            }),
          ),
          leaseTtl: described(Duration('3s'), "how long a node group's owner may be silent before another instance takes the group over (at least 1 s)"),
          replicas: Type.Union([Type.Literal(1), Type.Literal(3), Type.Literal(5)], {
            default: 3,
            description: 'copies JetStream keeps of the shared state: 3 survives the loss of one NATS server (needs a cluster of at least 3)',
          }),
          advertiseUrl: Type.Optional(
            Type.String({ pattern: '^https?://[^\\s]+$', description: 'how node agents and other instances reach this instance (default: server.publicUrl, else its listening address)' }),
          ),
        },
        { additionalProperties: false, description: 'several instances sharing the work through NATS JetStream (docs/cluster.md); absent: one process, nothing shared' },
      ),
    ),
    compat: Type.Object(
      {
        red5sm2: Type.Object(
          {
            enabled: Type.Boolean({ default: false, description: "Red5 Pro Stream Manager 2.0's paths under /as/v1, beside ours (docs/migrating-from-red5-sm2.md)" }),
            anonymousLookups: Type.Boolean({ default: false, description: 'its stream lookups, listings and node-group names without a token, limited per client address (limits.lookups.anonymous)' }),
            platform: described(Platform, "where node groups created through its admin API run: its cloudPlatform and images name another product's resources"),
          },
          { additionalProperties: false, default: {}, description: 'Red5 Pro Stream Manager 2.0 (environment SWITCHYARD_COMPAT_RED5SM2=on)' },
        ),
      },
      { additionalProperties: false, default: {}, description: "other products' APIs beside ours, each off unless asked for" },
    ),
    metrics: Type.Object(
      {
        custom: Type.Array(Type.String({ pattern: METRIC_NAME_PATTERN, description: 'a metric name' }), {
          maxItems: 64,
          uniqueItems: true,
          default: [],
          description: 'metrics an agent of yours reports besides those of docs/nodes.md, which rules may then read',
        }),
        nodeSeries: Type.Integer({
          minimum: 0,
          maximum: 10_000,
          default: 500,
          description: 'nodes per group with series of their own on /as/v1/metrics (the busiest first): bounds the series a scrape carries',
        }),
      },
      { additionalProperties: false, default: {}, description: 'node metrics: those rules may read, and those exported' },
    ),
  },
  { additionalProperties: false },
);

export type NodeGroupConfigInput = Type.Static<typeof NodeGroupConfig>;
export type ConfigInput = Type.Static<typeof ConfigSchema>;
