// Example requests and answers for the OpenAPI document and its docs page, written against the
// shipped default config (config/default.json: group `default`, regions `us-east` and `eu-west`).
// The contract test sends them to a service set up the same way, so they are known to work.

export const EXAMPLE_GROUP = 'default';
export const EXAMPLE_ORIGIN = 'us-east-origin-4f2a1c';
export const EXAMPLE_EDGE = 'us-east-edge-9c1d2e';

export const exampleAssignment = {
  serverAddress: '127.0.0.2',
  scope: 'live',
  name: 'cam1',
  nodeId: EXAMPLE_ORIGIN,
  role: 'origin',
  region: 'us-east',
};

export const exampleProvision = {
  streamName: 'show',
  region: 'us-east',
  streams: [
    { name: 'show_720', level: 1, videoBR: 2_500_000, videoWidth: 1280, videoHeight: 720, videoFPS: 30, audioBR: 128_000 },
    { name: 'show_360', level: 2, videoBR: 800_000, videoWidth: 640, videoHeight: 360, videoFPS: 30, audioBR: 64_000 },
  ],
};

/** A node group of a fixed fleet: two regions, an origin and an edge in each, scaling off. */
export const exampleNodeGroup = {
  name: 'studio',
  platform: {
    type: 'static',
    static: {
      nodes: [
        { id: 'studio-origin-1', role: 'origin', region: 'us-east', address: '203.0.113.10' },
        { id: 'studio-edge-1', role: 'edge', region: 'us-east', address: '203.0.113.20' },
        { id: 'studio-origin-2', role: 'origin', region: 'eu-west', address: '198.51.100.10' },
        { id: 'studio-edge-2', role: 'edge', region: 'eu-west', address: '198.51.100.20' },
      ],
    },
  },
  regions: [
    { name: 'us-east', lat: 39.04, lon: -77.49 },
    { name: 'eu-west', lat: 50.11, lon: 8.68 },
  ],
  roles: { origin: { publish: { protocol: 'rtmp', port: 1935 } }, edge: { parentRole: 'origin', subscribe: { protocol: 'rtmp', port: 1935 } } },
  rules: [
    { region: 'us-east', role: 'origin', min: 0, max: 1, limit: 20 },
    { region: 'us-east', role: 'edge', min: 0, max: 1, limit: 200 },
    { region: 'eu-west', role: 'origin', min: 0, max: 1, limit: 20 },
    { region: 'eu-west', role: 'edge', min: 0, max: 1, limit: 200 },
  ],
  timing: { heartbeatMs: 2000, nodeTimeout: '10s' },
};

export const exampleHeartbeat = {
  ready: true,
  address: { public: '203.0.113.7', private: '10.0.0.7' },
  metrics: { 'cpu.load': 0.31, 'memory.used': 0.42, 'connections.publisher': 3, 'connections.subscriber': 120, 'connections.clusterchildren': 4, 'network.egress': 81_000 },
  streams: [{ name: 'cam1', publishing: true, subscribers: 40 }],
};
