// Config fixtures and temporary directories for tests: plain data and files, no service, so that
// unit tests use them without loading the service (its threads, its GeoIP database).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../src/config/load.js';
import type { NodeGroup } from '../../src/config/types.js';
import type { NodeFacts } from '../../src/policy/scaling/facts.js';

export function tempDir(prefix = 'switchyard-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export interface StaticGroupOptions {
  name?: string;
  regions?: string[];
  nodes?: Array<{ id: string; role: string; region: string }>;
  rules?: unknown[];
  timing?: object;
  roles?: object;
  admission?: object;
}

/** A static node group: the test plays the node agents. */
export function staticGroup(options: StaticGroupOptions = {}) {
  const regions = options.regions ?? ['r1', 'r2'];
  const nodes = options.nodes ?? [
    { id: 'o1', role: 'origin', region: 'r1' },
    { id: 'o2', role: 'origin', region: 'r1' },
    { id: 'o3', role: 'origin', region: 'r2' },
    { id: 'e1', role: 'edge', region: 'r1' },
    { id: 'e2', role: 'edge', region: 'r1' },
    { id: 'e3', role: 'edge', region: 'r2' },
    { id: 't1', role: 'transcoder', region: 'r1' },
  ];
  return {
    name: options.name ?? 'g',
    platform: { type: 'static', static: { nodes: nodes.map((n, i) => ({ ...n, address: `10.0.0.${i + 1}` })) } },
    regions: regions.map((name, i) => ({ name, lat: 50 - i * 10, lon: i * 20 })),
    roles: options.roles ?? {
      origin: { publish: { protocol: 'rtmp', port: 1935 } },
      edge: { parentRole: 'origin', subscribe: { protocol: 'wss', port: 443 } },
      transcoder: { publish: { protocol: 'rtmp', port: 1935 } },
    },
    rules:
      options.rules ??
      regions.flatMap((region) => [
        { region, role: 'origin', min: 0, max: 4, limit: 3 },
        { region, role: 'edge', min: 0, max: 4, limit: 5 },
        { region, role: 'transcoder', min: 0, max: 2, limit: 2 },
      ]),
    // Nodes the test beats once stay in service however slow the machine; tests of silence set their own.
    timing: { heartbeatMs: 200, nodeTimeout: '1h', ...options.timing },
    ...(options.admission ? { admission: options.admission } : {}),
  };
}

/**
 * staticGroup's regions, roles and rules on the local platform (`local`: its settings), for tests
 * that plan or parse such a group and start nothing (localGroup is for those that start its nodes).
 */
export function localPlatformGroup(options: Omit<StaticGroupOptions, 'nodes'> = {}, local?: object) {
  return { ...staticGroup(options), platform: { type: 'local', ...(local ? { local } : {}) } };
}

/** A node group as the service reads it from its config: checked, defaults filled in, durations in ms. */
export function parsedGroup(raw: object): NodeGroup {
  return parseConfig({ nodeGroups: [raw] }, 'test').nodeGroups[0]!;
}

/** A rule's bounds for one role; the limit is 10 unless given (`limit: undefined`: the config's default). */
export type RoleBounds = { min: number; max: number; limit?: number } & Record<string, unknown>;

/**
 * A local node group: the service starts simulated (or nginx-rtmp) node agents on loopback
 * addresses from `firstAddress` on, each test on its own range. Roles follow the rules given:
 * origins always, edges unless `edges: null`, transcoders only when given; every rule is in the
 * first region (`here` unless `regions` says otherwise).
 */
export function localGroup(options: {
  firstAddress: string;
  name?: string;
  /** More local settings (backend, port, statPort); the port is 0 (any) unless given. */
  local?: object;
  regions?: Array<{ name: string; lat: number; lon: number }>;
  origins?: RoleBounds;
  edges?: RoleBounds | null;
  transcoders?: RoleBounds;
  /** The roles, when they are not those the rules name (a role the group has but never scales). */
  roles?: object;
  timing?: object;
}) {
  const regions = options.regions ?? [{ name: 'here', lat: 50, lon: 8 }];
  const region = regions[0]!.name;
  const bounds: Array<[string, RoleBounds | null | undefined]> = [
    ['origin', options.origins ?? { min: 1, max: 2 }],
    ['edge', options.edges === undefined ? { min: 1, max: 2 } : options.edges],
    ['transcoder', options.transcoders],
  ];
  const present = bounds.filter((b): b is [string, RoleBounds] => b[1] !== null && b[1] !== undefined);
  const rule = (role: string, b: RoleBounds) => Object.fromEntries(Object.entries({ region, role, limit: 10, ...b }).filter(([, v]) => v !== undefined));
  return {
    name: options.name ?? 'default',
    platform: { type: 'local', local: { firstAddress: options.firstAddress, port: 0, ...options.local } },
    regions,
    roles: options.roles ?? Object.fromEntries(present.map(([role]) => [role, role === 'edge' ? { parentRole: 'origin' } : {}])),
    rules: present.map(([role, b]) => rule(role, b)),
    timing: { heartbeatMs: 200, ...options.timing },
  };
}

/** The RTMP and stat ports of the media tests' nginx nodes (each node on its own loopback address). */
export const RTMP_PORT = 19935;
export const STAT_PORT = 19980;

/** A local group of nginx-rtmp nodes on RTMP_PORT and STAT_PORT, heartbeats every 300 ms, a node silent 5 s is FAULT. */
export function rtmpGroup(options: Parameters<typeof localGroup>[0]) {
  return localGroup({
    ...options,
    local: { backend: 'nginx-rtmp', port: RTMP_PORT, statPort: STAT_PORT },
    timing: { heartbeatMs: 300, nodeTimeout: '5s', ...options.timing },
  });
}

/** A provision of one rendition (`<stream>_360` unless named), in r1 unless told. */
export function ladder(streamName: string, options: { rendition?: string; region?: string } = {}) {
  return {
    streamName,
    region: options.region ?? 'r1',
    streams: [{ name: options.rendition ?? `${streamName}_360`, level: 1, videoBR: 800_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 }],
  };
}

/** What the scaling plan reads of a node: an idle origin in service in r1, heard from, unless `over` says otherwise. */
export function nodeFacts(over: Partial<NodeFacts> = {}): NodeFacts {
  return {
    id: 'n',
    role: 'origin',
    region: 'r1',
    state: 'INSERVICE',
    stateSince: 0,
    lastSeen: 0,
    reported: true,
    connections: 0,
    rank: 0,
    metrics: {},
    platform: { type: 'local', address: '127.0.0.2' },
    hasLiveStreams: false,
    ...over,
  };
}
