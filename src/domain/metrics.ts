// The metrics node agents report in their heartbeats (docs/nodes.md, "Metrics nodes report"),
// kept here once: rules' expressions may only read these and the operator's `metrics.custom`,
// so that a misspelt or invented name (`memory.total`) is refused where it is given instead of
// reading 0 for ever.

export const NODE_METRICS = [
  { name: 'connections.publisher', meaning: 'publishers connected (origins, transcoders)' },
  { name: 'connections.subscriber', meaning: "viewers and children's pulls (edges, relays, origins)" },
  { name: 'connections.clusterchildren', meaning: 'edges and relays pulling from this node' },
  { name: 'cpu.load', meaning: "the node's load average over its cores (0–1 per core)" },
  { name: 'cpu.usage', meaning: 'the same as a percentage (0–100), as Red5 Pro Stream Manager 2.0 names it' },
  { name: 'memory.used', meaning: 'the fraction of memory in use (0–1)' },
  { name: 'network.ingress', meaning: 'bytes per second in (nginx-rtmp nodes)' },
  { name: 'network.egress', meaning: 'bytes per second out (nginx-rtmp nodes)' },
] as const;

export const NODE_METRIC_NAMES: readonly string[] = NODE_METRICS.map((m) => m.name);

/** A metric's name as agents may send it (the heartbeat's own rule) and `metrics.custom` lists it. */
export const METRIC_NAME_PATTERN = '^[A-Za-z][A-Za-z0-9_.]{0,63}$';

/** The names expressions may read: the reported ones and the operator's custom ones. */
export function knownMetrics(custom: readonly string[] = []): ReadonlySet<string> {
  return new Set([...NODE_METRIC_NAMES, ...custom]);
}

/** What an error about an unknown name says: which names exist, and how to add one. */
export function unknownMetricMessage(name: string, known: ReadonlySet<string>): string {
  return `unknown metric '${name}': nodes report ${[...known].join(', ')} (an agent's own metric must be listed in the config's metrics.custom)`;
}
