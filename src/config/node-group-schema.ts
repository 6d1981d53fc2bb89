// The node-group schema: one group's platform, regions, roles, rules, timing, limits and
// selection. The same schema validates the config file's groups at start (schema.ts nests it) and
// the admin API's node-group bodies, so an operator meets one set of rules in both places. It also
// says what a valid group becomes (its decoded form, the types in types.ts): durations are
// milliseconds, unset state timeouts the domain's defaults. Also the building blocks both schemas
// use: described, Duration, Name, Settings, decoded.
import ms from 'ms';
import Type, { type StaticDecode, type StaticEncode, type TLiteral, type TObject, type TObjectOptions, type TOptional, type TSchema, type TSchemaOptions, type TUnion } from 'typebox';
import { DecodeUnsafe } from 'typebox/value';
import { STRATEGY_NAMES } from '../policy/selection/registry.js';
import {
  CLIENT_PROTOCOLS,
  DEFAULT_STATE_TIMEOUTS,
  DURATION_PATTERN,
  LOCAL_BACKENDS,
  NAME_DESCRIPTION,
  NAME_MAX,
  NAME_PATTERN,
  ROLES,
  type Role,
  STATES_WITH_TIMEOUT,
  type TimedState,
} from '../domain/vocabulary.js';

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

/** A duration as the config writes it, in milliseconds. */
export function durationMs(value: number | string): number {
  return typeof value === 'number' ? value : ms(value as ms.StringValue);
}

/**
 * A duration: milliseconds as a number, or a string such as "500ms", "10s", "5m", "1h". Decoded,
 * milliseconds (and encoded back as such, which is a valid duration too).
 */
export function Duration(defaultValue?: string) {
  const written = Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: DURATION_PATTERN })], {
    description: DURATION_WORDS,
    'x-expected': DURATION_WORDS,
    ...(defaultValue === undefined ? {} : { default: defaultValue }),
  });
  return Type.Codec(written)
    .Decode((value): number => durationMs(value))
    .Encode((milliseconds) => milliseconds);
}

/**
 * A checked value in its decoded form (durations in milliseconds, and whatever else the schema's
 * codecs say), in place. Only for a value the schema's check passed: a codec trusts its input.
 */
export function decoded<T extends TSchema>(schema: T, value: StaticEncode<T>): StaticDecode<T> {
  return DecodeUnsafe({}, schema, value) as StaticDecode<T>;
}

/**
 * One of a list of strings: a union of literals (as docs and errors show it), typed as their union
 * (TypeBox infers a union only from a tuple; a list made at run time is typed as one literal of it).
 */
export function Literals<V extends string>(values: readonly V[], options: TSchemaOptions): TUnion<[TLiteral<V>]> {
  return Type.Union(
    values.map((v) => Type.Literal(v)),
    options,
  ) as unknown as TUnion<[TLiteral<V>]>;
}

/** An object with one optional member per role, each the same schema (the group's roles). */
function perRole<T extends TSchema>(member: T, options: TObjectOptions): TObject<Record<Role, TOptional<T>>> {
  return Type.Object(Object.fromEntries(ROLES.map((r) => [r, Type.Optional(member)])) as Record<Role, TOptional<T>>, options);
}

export const Name = Type.String({ pattern: NAME_PATTERN, maxLength: NAME_MAX, description: NAME_DESCRIPTION, 'x-expected': NAME_DESCRIPTION });

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
    parentRole: Type.Optional(Literals(ROLES, { description: 'the role an edge or relay pulls from: origin (an edge or a relay) or relay (an edge)' })),
    publish: Type.Optional(described(Listener, 'the publish listener answered (endpoint 4) when a node does not report its own')),
    subscribe: Type.Optional(described(Listener, 'the playback listener answered (endpoint 5) when a node does not report its own')),
    serves: Type.Optional(
      Type.Array(Literals(CLIENT_PROTOCOLS, { description: 'rtmp, whip or whep' }), {
        uniqueItems: true,
        maxItems: CLIENT_PROTOCOLS.length,
        description:
          "what clients do on this role's nodes: rtmp (publish or play), whip (publish over WebRTC), whep (play over WebRTC); the WebRTC proxy takes a role only where it says whip or whep (default: what the local platform's backend serves; undeclared on other platforms)",
      }),
    ),
  },
  { additionalProperties: false },
);

export const Rule = Type.Object(
  {
    region: described(Name, "one of the group's regions"),
    role: Literals(ROLES, { description: 'origin, edge, relay or transcoder' }),
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

const StateTimeout = (s: TimedState) => Type.Optional(described(Duration(), `how long a node may stay ${s} (default ${DEFAULT_STATE_TIMEOUTS[s] / 1000} s)`));

/** Decoded, every state has its timeout: the one given, else the domain's default. */
const StateTimeouts = Type.Codec(
  Type.Object(Object.fromEntries(STATES_WITH_TIMEOUT.map((s) => [s, StateTimeout(s)])) as Record<TimedState, ReturnType<typeof StateTimeout>>, {
    additionalProperties: false,
    default: {},
    description: 'per-state timeouts; overstaying one is a FAULT (a destroy is asked for again)',
  }),
)
  .Decode((given): Record<TimedState, number> => ({ ...DEFAULT_STATE_TIMEOUTS, ...given }))
  .Encode((timeouts) => timeouts);

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
    role: Literals(ROLES, { description: 'origin, edge, relay or transcoder' }),
    region: described(Name, "one of the group's regions"),
    address: Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9.:_-]+$', description: 'a host name or IP address clients connect to' }),
  },
  { additionalProperties: false },
);

export const Settings = Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_-]{0,63}$' }), Type.Unknown(), { default: {}, description: 'name → value' });

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
        backend: Literals(LOCAL_BACKENDS, {
          default: 'simulated',
          description:
            "simulated (needs nothing beyond npm), nginx-rtmp (needs nginx, libnginx-mod-rtmp and ffmpeg), werift (WebRTC: WHIP and WHEP in the agent, needs nothing beyond npm; docs/webrtc.md) or janus (WebRTC on a Janus gateway per node, each in a network namespace of its own: needs root and Debian's janus; docs/webrtc.md#janus-nodes)",
        }),
        firstAddress: Type.String({
          pattern: '^127\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}$',
          default: '127.0.0.2',
          description: 'a loopback address 127.x.y.z: the first one handed to a node; the next ones count up from it',
        }),
        port: Type.Integer({
          minimum: 0,
          maximum: 65535,
          default: 18935,
          description: "the port each local node's media listener asks for on its own address (RTMP for nginx-rtmp nodes, WHIP and WHEP over HTTP for werift nodes)",
        }),
        statPort: Type.Integer({ minimum: 1, maximum: 65535, default: 18080, description: "nginx-rtmp nodes: the HTTP port of each node's stat page, on its own address (read by its agent)" }),
        janus: Type.Object(
          {
            subnet: Type.String({
              pattern: '^[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}/[0-9]{1,2}$',
              default: '10.213.0.0/16',
              description:
                "janus nodes: the private IPv4 subnet of their network namespaces (one bridge per subnet; the bridge takes .1, a node the low bits of its loopback address); another service's Janus nodes on this machine need another",
            }),
          },
          { additionalProperties: false, default: {}, description: 'janus nodes on the local platform (docs/webrtc.md#janus-nodes)' },
        ),
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

/** A window of scheduled capacity (docs/scaling.md, "Schedules"). */
export const Schedule = Type.Object(
  {
    name: described(Name, "the schedule's name, in events and status"),
    cron: Type.String({ minLength: 1, maxLength: 128, description: 'when each window starts: a cron expression (minute hour day month weekday), e.g. "0 18 * * FRI"' }),
    duration: described(Duration(), 'how long each window lasts (1 minute to 31 days)'),
    timezone: Type.String({ minLength: 1, maxLength: 64, default: 'UTC', description: 'the time zone the cron expression reads in: an IANA name such as UTC or Europe/Berlin' }),
    role: Literals(ROLES, { description: 'the role whose rule it changes' }),
    region: Type.Optional(described(Name, "the region whose rule it changes (default: every region's rule for the role)")),
    min: Type.Optional(Type.Integer({ minimum: 0, maximum: 1024, description: 'the min while a window is open' })),
    max: Type.Optional(Type.Integer({ minimum: 0, maximum: 1024, description: 'the max while a window is open (raised to min if below it)' })),
  },
  { additionalProperties: false },
);

/** The operator's app, asked before a lookup hands out a node (docs/security.md, "Who may publish and play"). */
export const AdmissionWebhook = Type.Object(
  {
    url: Type.String({
      pattern: '^https?://[A-Za-z0-9._~:/?#@!&()*+,;=%\\[\\]-]+$',
      maxLength: 2048,
      description: 'an http:// or https:// URL of your app; link-local and cloud metadata addresses are refused unless allowLinkLocal',
    }),
    secret: Type.String({
      pattern: '^whsec_([A-Za-z0-9+/]{22,}={0,2}|\\(kept\\))$',
      maxLength: 256,
      description: 'a Standard Webhooks secret: whsec_ and 16 or more random bytes in base64 (requests are signed with it); whsec_(kept), as the API shows it, keeps the stored one in a replace',
    }),
    timeout: described(Duration('2s'), 'how long a lookup waits for the answer'),
    cacheTtl: described(Duration('10s'), 'how long an answer is reused for the same stream, action and credential (0: never)'),
    failOpen: Type.Boolean({ default: false, description: 'when the app does not answer in time: false refuses the lookup (503), true lets it through' }),
    allowLinkLocal: Type.Boolean({ default: false, description: 'allow a link-local or cloud metadata address (refused by default: they are where clouds keep credentials)' }),
  },
  { additionalProperties: false },
);

export const Admission = Type.Object(
  {
    enabled: Type.Boolean({
      default: true,
      description: 'nodes admit only clients holding the token of a lookup answer (and nodes of the group pulling from each other); false admits anyone, as media servers do by default',
    }),
    tokenTtl: described(Duration('2m'), 'how long a lookup answer’s token may be used to connect (a connection outlives it)'),
    clockLeeway: described(Duration('30s'), "slack for the clocks of the service and its nodes when a node checks a token's times"),
    webhook: Type.Optional(described(AdmissionWebhook, "your app's say before a lookup hands out a node: a signed POST answered allow or deny")),
  },
  { additionalProperties: false, default: {}, description: 'who may publish and play on its nodes (docs/security.md, "Who may publish and play")' },
);

export const NodeGroupConfig = Type.Object(
  {
    name: described(Name, `the node group's name (the {nodeGroup} of the API's paths): ${NAME_DESCRIPTION}`),
    scope: Type.String({ pattern: '^[A-Za-z0-9._-]{1,64}$', default: 'live', description: 'the application scope of its streams: 1–64 characters of [A-Za-z0-9._-]' }),
    platform: Platform,
    regions: Type.Array(Region, { minItems: 1, maxItems: 64, description: 'where its nodes run, in the order tried when a client has no location' }),
    roles: perRole(RoleOptions, {
      additionalProperties: false,
      description: 'the roles it has (origin, edge, relay, transcoder), each with its options; edges and relays name the role they pull from',
    }),
    rules: Type.Array(Rule, { maxItems: 1024, default: [], description: 'one per region and role: how many nodes, and when to scale (docs/scaling.md)' }),
    schedules: Type.Array(Schedule, { maxItems: 64, default: [], description: "windows that raise or lower a role's min and max, e.g. edges warmed before an event (docs/scaling.md)" }),
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
    admission: Admission,
    selection: Type.Object(
      {
        strategy: Literals(STRATEGY_NAMES, { default: STRATEGY_NAMES[0], description: `${STRATEGY_NAMES.join(' or ')}: two random picks among the near-equal lightest nodes, or always the lightest` }),
        nearEqual: Type.Number({ minimum: 0, maximum: 1, default: 0.05, description: "near-equal: within this fraction of the lightest node's limit (at least one connection)" }),
      },
      { additionalProperties: false, default: {}, description: 'how a node is chosen among those with room (docs/choosing-nodes.md)' },
    ),
  },
  { additionalProperties: false },
);

export type NodeGroupConfigInput = Type.Static<typeof NodeGroupConfig>;
