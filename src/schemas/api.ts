// Request and response schemas of the REST API. Field names are the specification's
// (rest-api.md); ranges and rules the specification leaves open are decided here and shown in
// the OpenAPI document (docs/api.md, docs/choosing-nodes.md, docs/nodes.md).
import Type, { type TSchema } from 'typebox';
import { NAME_DESCRIPTION, NAME_MAX, NAME_PATTERN, NODE_STATES, ROLES, STREAM_NAME_DESCRIPTION, STREAM_NAME_PATTERN } from '../domain/vocabulary.js';

export const GroupName = Type.String({ pattern: NAME_PATTERN, maxLength: NAME_MAX, description: `node group name: ${NAME_DESCRIPTION}` });
export const StreamName = Type.String({ pattern: STREAM_NAME_PATTERN, description: `stream name: ${STREAM_NAME_DESCRIPTION}` });
const RoleName = Type.Union(ROLES.map((r) => Type.Literal(r)));
const StateName = Type.Union(NODE_STATES.map((s) => Type.Literal(s)));
const BooleanFlag = (description: string) => Type.Optional(Type.Boolean({ description }));

// ---- auth ---------------------------------------------------------------------------------------

export const LoginBody = Type.Object({ username: Type.String({ minLength: 1, maxLength: 256 }), password: Type.String({ minLength: 1, maxLength: 1024 }) }, { additionalProperties: false });
export const LoginResponse = Type.Object({
  accessToken: Type.String({ description: 'a JWT; send it as Authorization: Bearer <accessToken>' }),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'seconds until the token expires' }),
});
export const Jwks = Type.Object(
  {
    keys: Type.Array(
      Type.Object({ kty: Type.Literal('EC'), crv: Type.Literal('P-256'), x: Type.String(), y: Type.String(), use: Type.Literal('sig'), alg: Type.Literal('ES256'), kid: Type.String() }),
      { description: 'the key that signs tokens under ES256; empty under HS256, whose secret is never published' },
    ),
  },
  { description: 'a JSON Web Key Set (RFC 7517)' },
);
export const PasswordBody = Type.Object(
  {
    currentPassword: Type.String({ minLength: 1, maxLength: 1024 }),
    newPassword: Type.String({ minLength: 12, maxLength: 1024, description: 'at least 12 characters' }),
  },
  { additionalProperties: false },
);

// ---- lookups ------------------------------------------------------------------------------------

const RegionList = Type.String({
  pattern: '^[A-Za-z0-9._-]{1,32}(,[A-Za-z0-9._-]{1,32}){0,63}$',
  description: 'comma-separated region names to try first, in order',
});
const ClientIp = Type.String({ minLength: 2, maxLength: 45, description: "the end user's IP address, when an app asks on its behalf (GeoIP)" });

const Credential = Type.String({
  minLength: 1,
  maxLength: 1024,
  description: 'what the client gives for its admission, passed on as given to the group\'s admission webhook (docs/security.md, "Who may publish and play")',
});

const RoutingQuery = {
  region: Type.Optional(RegionList),
  strict: BooleanFlag('true: only the first region of the order; 503 instead of falling back'),
  clientIp: Type.Optional(ClientIp),
  credential: Type.Optional(Credential),
};

export const StreamLookupQuery = Type.Object(
  { transcode: BooleanFlag('false: an origin for a publisher; true: a transcoder (needs a provision); omitted: an edge for a subscriber'), ...RoutingQuery },
  { additionalProperties: false },
);
export const LiveLookupQuery = Type.Object({ nodeGroup: Type.Optional(GroupName), ...RoutingQuery }, { additionalProperties: false });

export const ServerAssignment = Type.Object({
  serverAddress: Type.String({ description: 'host (IP or DNS name) the client connects to' }),
  scope: Type.String({ description: 'application scope, e.g. live' }),
  name: Type.String({ description: 'stream name' }),
  nodeId: Type.String(),
  role: RoleName,
  region: Type.String(),
  url: Type.String({ description: 'the whole URL the client connects to, the admission token included (rtmp://host:port/scope/name?token=…)' }),
  token: Type.Optional(
    Type.String({
      description: "the admission token: for this stream, this node and this action only, valid for the group's admission.tokenTtl (absent where the group admits anyone)",
    }),
  ),
  expiresAt: Type.Optional(Type.String({ format: 'date-time', description: 'when the token stops being accepted for a new connection' })),
});
export const ServerAssignmentWithListener = Type.Object({
  ...ServerAssignment.properties,
  port: Type.Integer({ description: "the node's listener for this client: reported by the node, else its role's configured one, else 1935" }),
  protocol: Type.String({ description: 'e.g. rtmp (publish), wss (subscribe); http for simulated nodes; rtmp when nothing names one' }),
});

// ---- provisions ---------------------------------------------------------------------------------

export const Rendition = Type.Object(
  {
    name: StreamName,
    level: Type.Integer({ minimum: 0, maximum: 255, description: 'playback order: a lower number means higher quality; unique in a provision' }),
    videoBR: Type.Integer({ minimum: 1000, maximum: 200_000_000, description: 'video bitrate in bits per second' }),
    videoWidth: Type.Integer({ minimum: 16, maximum: 7680, description: 'pixels' }),
    videoHeight: Type.Integer({ minimum: 16, maximum: 4320, description: 'pixels' }),
    videoFPS: Type.Integer({ minimum: 1, maximum: 240, description: 'frames per second' }),
    audioBR: Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'audio bitrate in bits per second; 0 for no audio' }),
  },
  { additionalProperties: false },
);
export const ProvisionBody = Type.Object(
  {
    streamName: StreamName,
    region: Type.String({ pattern: NAME_PATTERN, maxLength: NAME_MAX, description: "one of the node group's regions (its transcoded renditions go to an origin nearest it)" }),
    streams: Type.Array(Rendition, { minItems: 1, maxItems: 16, description: '1–16 renditions; names and levels unique' }),
  },
  { additionalProperties: false },
);
export const StoredProvision = Type.Object({
  ...ProvisionBody.properties,
  nodeGroup: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' }),
});

// ---- lists, streams, node groups ---------------------------------------------------------------

export const PageQuery = Type.Object(
  {
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
    after: Type.Optional(Type.String({ minLength: 1, maxLength: 300, description: 'the last key of the previous page' })),
  },
  { additionalProperties: false },
);
export const StreamsQuery = Type.Object({ ...PageQuery.properties, nodeGroup: Type.Optional(GroupName) }, { additionalProperties: false });

const NodeRef = Type.Object({
  nodeId: Type.String(),
  region: Type.Union([Type.String(), Type.Null()]),
  state: Type.Union([StateName, Type.Null()]),
});
export const StreamView = Type.Object({
  nodeGroup: Type.String(),
  name: Type.String(),
  state: Type.Union([Type.Literal('PENDING'), Type.Literal('LIVE')]),
  origin: Type.Object({ ...NodeRef.properties, serverAddress: Type.Union([Type.String(), Type.Null()]) }),
  transcoder: Type.Optional(NodeRef),
  renditions: Type.Optional(Type.Array(Type.String())),
  subscribers: Type.Integer({ description: 'viewers on edges, as the edges last reported' }),
  edges: Type.Array(Type.Object({ nodeId: Type.String(), region: Type.String(), state: StateName, subscribers: Type.Integer({ description: 'its viewers of this stream, as it last reported' }) }), {
    description: 'the edges that carry the stream, or were just handed its viewers',
  }),
  boundAt: Type.String({ format: 'date-time' }),
  since: Type.String({ format: 'date-time' }),
  bitrate: Type.Union([Type.Integer(), Type.Null()], { description: "bits per second its publisher's node receives, where the node says (GET …/stats has more)" }),
  uptimeSeconds: Type.Union([Type.Integer(), Type.Null()], { description: 'how long its publisher has been up, where its node says' }),
});

export const ListenerSchema = Type.Object({ protocol: Type.String({ pattern: '^[a-z][a-z0-9+.-]{0,15}$' }), port: Type.Integer({ minimum: 1, maximum: 65535 }) }, { additionalProperties: false });

export const NodeView = Type.Object({
  id: Type.String(),
  role: RoleName,
  region: Type.String(),
  state: StateName,
  stateSince: Type.String({ format: 'date-time' }),
  address: Type.Union([Type.String(), Type.Null()]),
  parent: Type.Union([Type.String(), Type.Null()]),
  load: Type.Number({ description: 'the rank the selection uses: last reported, plus assignments since' }),
  limit: Type.Union([Type.Number(), Type.Null()]),
  streams: Type.Integer(),
  connections: Type.Object({ publisher: Type.Number(), subscriber: Type.Number() }),
  lastHeartbeat: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  faultReason: Type.Optional(Type.String()),
  problem: Type.Optional(Type.String({ description: 'why the node says it is not ready (its media server crashed, say), while it says so' })),
  platform: Type.Object(
    { type: Type.String(), address: Type.Optional(Type.String()), pid: Type.Optional(Type.Integer()) },
    { additionalProperties: true, description: 'where the node runs (local nodes: their process id)' },
  ),
  listeners: Type.Object({ publish: Type.Optional(ListenerSchema), subscribe: Type.Optional(ListenerSchema) }, { description: 'where publishers and players connect' }),
});

const Counts = Type.Object({
  total: Type.Integer(),
  byRole: Type.Record(Type.String(), Type.Record(Type.String(), Type.Integer()), { description: 'role → state → count' }),
});
export const NodeGroupSummary = Type.Object({
  name: Type.String(),
  scope: Type.String(),
  platform: Type.String(),
  regions: Type.Array(Type.String()),
  nodes: Counts,
  load: Type.Array(Type.Object({ role: RoleName, connections: Type.Number(), capacity: Type.Number() })),
  streams: Type.Object({ live: Type.Integer(), pending: Type.Integer() }),
  provisions: Type.Integer(),
  ready: Type.Boolean({ description: "false while the group's actor is (re)starting" }),
  status: Type.Union([Type.Literal('active'), Type.Literal('deleting')]),
});
export const NodeGroupDetail = Type.Object({
  ...NodeGroupSummary.properties,
  config: Type.Unknown({ description: 'the node group as configured, defaults filled in' }),
  nodeList: Type.Array(NodeView, { description: 'the nodes, paged with ?limit= and ?after=' }),
  scaling: Type.Array(
    Type.Object({
      region: Type.String(),
      role: RoleName,
      min: Type.Integer({ description: 'as it is now: a schedule’s open window may have set it' }),
      max: Type.Integer({ description: 'as it is now: a schedule’s open window may have set it' }),
      inService: Type.Integer(),
      pending: Type.Integer(),
      fault: Type.Integer(),
      schedules: Type.Array(
        Type.Object({
          name: Type.String(),
          min: Type.Optional(Type.Integer()),
          max: Type.Optional(Type.Integer()),
          from: Type.String({ format: 'date-time' }),
          until: Type.String({ format: 'date-time' }),
        }),
        { description: "the schedules' windows open now for this rule" },
      ),
    }),
  ),
  schedules: Type.Array(
    Type.Object({
      name: Type.String(),
      role: RoleName,
      region: Type.Union([Type.String(), Type.Null()]),
      cron: Type.String(),
      timezone: Type.String(),
      next: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
    }),
    { description: "the group's schedules and when each next opens a window" },
  ),
});

// ---- node agents: their messages are declared once, in ./heartbeat.ts ------------------------------

export const NodeIdParam = Type.String({ pattern: NAME_PATTERN, maxLength: NAME_MAX, description: `node id: ${NAME_DESCRIPTION}` });

// ---- health and errors ---------------------------------------------------------------------------

export const ProblemSchema = Type.Object({
  type: Type.String(),
  title: Type.String(),
  status: Type.Integer(),
  code: Type.String(),
  detail: Type.String(),
  error: Type.String({ description: 'repeats detail, for Red5 Stream Manager 2.0 clients' }),
  errorMessage: Type.String({ description: 'repeats detail, for older Red5 Stream Manager clients' }),
  errors: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  requestId: Type.Optional(Type.String()),
});

// ---- per-stream statistics (src/model/stream-stats.ts) -------------------------------------------

const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
const VideoMedia = Type.Object({ codec: Type.Optional(Type.String()), width: Type.Optional(Type.Integer()), height: Type.Optional(Type.Integer()), fps: Type.Optional(Type.Number()) });
const AudioMedia = Type.Object({ codec: Type.Optional(Type.String()), channels: Type.Optional(Type.Integer()), sampleRate: Type.Optional(Type.Integer()) });
export const StreamStatsSchema = Type.Object({
  nodeGroup: Type.String(),
  stream: Type.String({ description: 'the stream as bound (a rendition resolves to its stream)' }),
  name: Type.String({ description: 'the name asked for' }),
  state: Type.Union([Type.Literal('PENDING'), Type.Literal('LIVE')]),
  uptimeSeconds: Nullable(Type.Integer({ description: 'how long its publisher has been up, as its node says' })),
  publisher: Nullable(
    Type.Object({
      nodeId: Type.String(),
      role: RoleName,
      region: Type.String(),
      bitrate: Nullable(Type.Integer({ description: 'bits per second, as received from the publisher' })),
      video: Nullable(VideoMedia),
      audio: Nullable(AudioMedia),
    }),
  ),
  viewers: Type.Integer({ description: 'viewers over every node that serves it' }),
  nodes: Type.Array(
    Type.Object({
      nodeId: Type.String(),
      role: RoleName,
      region: Type.String(),
      viewers: Type.Integer(),
      bitrateIn: Nullable(Type.Integer()),
      bitrateOut: Nullable(Type.Integer()),
    }),
    { description: 'its origin and each edge carrying it' },
  ),
  renditions: Type.Optional(Type.Array(Type.Object({ name: Type.String(), bitrate: Nullable(Type.Integer()), video: Nullable(VideoMedia) }))),
});

// ---- webhooks (docs/webhooks.md) ----------------------------------------------------------------

const Delivery = Type.Object({
  cursor: Type.Integer({ description: 'the last event id sent to it, or passed because it does not want it' }),
  backlog: Type.Integer({ description: 'events after the cursor (wanted or not): what it has still to be passed' }),
  delivered: Type.Integer(),
  failures: Type.Integer({ description: 'failed attempts, all told' }),
  consecutiveFailures: Type.Integer({ description: 'failed attempts since the last success (the same event each time)' }),
  lost: Type.Integer({ description: 'events the log dropped (it keeps the last 10,000) before they could be sent' }),
  lastSuccessAt: Type.Union([Type.Number(), Type.Null()], { description: 'ms since the epoch' }),
  lastAttemptAt: Type.Union([Type.Number(), Type.Null()]),
  lastError: Type.Union([Type.String(), Type.Null()]),
  nextAttemptAt: Type.Union([Type.Number(), Type.Null()], { description: 'when the failed event is tried again' }),
});

export const WebhookViewSchema = Type.Object({
  id: Type.String(),
  url: Type.String(),
  secret: Type.Literal('whsec_(kept)', { description: 'never shown; send it back in a replace to keep the stored one' }),
  events: Type.Array(Type.String()),
  groups: Type.Array(Type.String()),
  streams: Type.Array(Type.String()),
  allowLinkLocal: Type.Boolean(),
  source: Type.Union([Type.Literal('config'), Type.Literal('api')]),
  delivery: Delivery,
});
