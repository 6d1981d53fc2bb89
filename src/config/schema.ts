// The config file's schema: the service's own settings (server, auth, storage, Terraform's
// operator settings, cluster, limits, compat, metrics) around the node groups, whose schema is
// node-group-schema.ts.
import Type from 'typebox';
import { MIN_FREE_FLOOR } from '../domain/disk.js';
import { METRIC_NAME_PATTERN } from '../domain/metrics.js';
import { described, Duration, Literals, Name, NodeGroupConfig, Platform, Settings } from './node-group-schema.js';
import { MAX_WEBHOOKS, WebhookSchema } from './webhook-schema.js';

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
        level: Literals(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, {
          default: 'info',
          description: 'fatal, error, warn, info, debug, trace or silent',
        }),
        format: Literals(['auto', 'pretty', 'json'] as const, {
          default: 'auto',
          description: 'pretty (lines for people), json (one JSON object a line, for machines) or auto: pretty when stdout is a terminal, JSON otherwise',
        }),
      },
      { additionalProperties: false, default: {}, description: 'logs on stdout (pino)' },
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
    webhooks: Type.Array(WebhookSchema, {
      maxItems: MAX_WEBHOOKS,
      default: [],
      description: 'endpoints every matching event is POSTed to, signed the Standard Webhooks way, in order, at least once (docs/webhooks.md; the API can add more)',
    }),
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
          snapshotEntries: Type.Integer({
            minimum: 100,
            maximum: 100_000_000,
            default: 10_000,
            description:
              "a node group's owner snapshots the group and compacts its log once this many entries were appended since the last snapshot: the log holds about that many entries, and a new owner replays at most that many (docs/cluster.md, Sizing)",
          }),
          snapshotInterval: described(
            Duration('1h'),
            "the owner also snapshots at the group's first commit once this long has passed since its last snapshot, however few entries came (at least 1 s)",
          ),
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
        streamSeries: Type.Integer({
          minimum: 0,
          maximum: 10_000,
          default: 50,
          description: 'streams with series of their own on /as/v1/metrics (viewers, bit rate): the most watched, over every group',
        }),
      },
      { additionalProperties: false, default: {}, description: 'node metrics: those rules may read, and those exported' },
    ),
  },
  { additionalProperties: false },
);

export type ConfigInput = Type.Static<typeof ConfigSchema>;
