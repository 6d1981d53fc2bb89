// The words of docs/api.md, docs/nodes.md as types and constants, shared by the front end, the actors,
// the node agent and the schemas.

export const ROLES = ['origin', 'edge', 'relay', 'transcoder'] as const;
export type Role = (typeof ROLES)[number];

/**
 * What clients do on a node (docs/webrtc.md, "What a group serves"): publish or play over RTMP,
 * publish over WebRTC (WHIP), play over WebRTC (WHEP). A listener with one of these protocols
 * serves it; WHIP and WHEP listeners are HTTP endpoints.
 */
export const CLIENT_PROTOCOLS = ['rtmp', 'whip', 'whep'] as const;
export type ClientProtocol = (typeof CLIENT_PROTOCOLS)[number];

/** The media servers the local platform runs beside its node agents (src/agent/backend.ts). */
export const LOCAL_BACKENDS = ['simulated', 'nginx-rtmp', 'werift', 'janus'] as const;
export type LocalBackend = (typeof LOCAL_BACKENDS)[number];

/**
 * What each role's nodes serve on a local backend that speaks a client protocol (the simulated
 * one speaks its own session API): a role's default `serves`, and the most it may declare.
 */
export const BACKEND_SERVES: Partial<Record<LocalBackend, Record<Role, readonly ClientProtocol[]>>> = {
  'nginx-rtmp': { origin: ['rtmp'], edge: ['rtmp'], relay: ['rtmp'], transcoder: ['rtmp'] },
  // A WebRTC transcoder waits for a later round (docs/webrtc.md).
  werift: { origin: ['whip', 'whep'], edge: ['whep'], relay: ['whep'], transcoder: [] },
  // Janus forwards from an origin's room only: no relay role (docs/webrtc.md, "Janus nodes").
  janus: { origin: ['whip', 'whep'], edge: ['whep'], relay: [], transcoder: [] },
};

/** Which connection count a role's load is measured in, and what one assignment adds to. */
export const LOAD_METRIC: Record<Role, string> = {
  origin: 'connections.publisher',
  transcoder: 'connections.publisher',
  edge: 'connections.subscriber',
  relay: 'connections.clusterchildren',
};

export const NODE_STATES = ['REQUESTED', 'CREATING', 'CREATED', 'STARTED', 'INSERVICE', 'SOFT_SUNSET', 'HARD_SUNSET', 'DESTRUCTION_REQUESTED', 'DESTROYING', 'FAULT', 'DOOMED'] as const;
export type NodeState = (typeof NODE_STATES)[number];

/** States a node may only stay in for a bounded time; overstaying one is a fault. */
export const STATES_WITH_TIMEOUT = ['REQUESTED', 'CREATING', 'CREATED', 'STARTED', 'HARD_SUNSET', 'DESTRUCTION_REQUESTED', 'DESTROYING'] as const satisfies readonly NodeState[];
export type TimedState = (typeof STATES_WITH_TIMEOUT)[number];

export const DEFAULT_STATE_TIMEOUTS: Record<TimedState, number> = {
  REQUESTED: 60_000,
  CREATING: 5 * 60_000,
  CREATED: 5 * 60_000,
  STARTED: 2 * 60_000,
  HARD_SUNSET: 30_000,
  DESTRUCTION_REQUESTED: 5 * 60_000,
  DESTROYING: 5 * 60_000,
};

/**
 * Node group, region and node names: 1–32 characters of [A-Za-z0-9._-], a dot only between two
 * other characters. Never `.` or `..`: names end up in paths of the data directory, Terraform
 * addresses and node directories, where a dot-name would climb or hide; and never a dot at the
 * end or two in a row: in cluster mode a group's name is part of NATS subjects
 * (`sy.wal.<group>`), where an empty token is no subject at all. The length is the schemas'
 * maxLength (NAME_MAX), so the pattern needs no lookahead.
 */
export const NAME_PATTERN = '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$';
export const NAME_MAX = 32;
export const NAME_DESCRIPTION = '1–32 characters of [A-Za-z0-9._-], a dot only between two other characters';
export const NAME_RE = new RegExp(NAME_PATTERN);
/** Whether `name` is a node group, region or node name. */
export const isName = (name: string): boolean => name.length <= NAME_MAX && NAME_RE.test(name);

/** Stream and rendition names: 1–128 characters of [A-Za-z0-9._~-], not starting with a dot. */
export const STREAM_NAME_PATTERN = '^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,127}$';
export const STREAM_NAME_DESCRIPTION = '1–128 characters of [A-Za-z0-9._~-], not starting with a dot';
export const STREAM_NAME_RE = new RegExp(STREAM_NAME_PATTERN);

export const DURATION_PATTERN = '^[0-9]+(\\.[0-9]+)?(ms|s|m|h|d)$';

export type BindingState = 'PENDING' | 'LIVE';

export type TokenRole = 'admin' | 'app' | 'node';
