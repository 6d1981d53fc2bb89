// Config fixtures and temporary directories for tests: plain data and files, no service, so that
// unit tests use them without loading the service (its threads, its GeoIP database).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function tempDir(prefix = 'switchyard-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A static node group: the test plays the node agents. */
export function staticGroup(
  options: { name?: string; regions?: string[]; nodes?: Array<{ id: string; role: string; region: string }>; rules?: unknown[]; timing?: object; roles?: object; admission?: object } = {},
) {
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
