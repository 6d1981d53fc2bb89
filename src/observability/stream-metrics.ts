// Per-stream series on /as/v1/metrics (docs/observability.md): viewers and the publisher's bit rate
// of the most watched streams over every group, `metrics.streamSeries` of them at most, so that a
// fleet of a million streams does not become a million series.
import { Gauge, type Registry } from 'prom-client';

export interface BusyStream {
  group: string;
  stream: string;
  viewers: number;
  bitrate: number | null;
}

export function registerStreamMetrics(registry: Registry, busiest: () => Promise<BusyStream[]>): void {
  let pending: Promise<BusyStream[]> | null = null;
  // One read per scrape for both gauges.
  const read = () => (pending ??= busiest().finally(() => setImmediate(() => (pending = null))));
  new Gauge({
    name: 'switchyard_stream_viewers',
    help: 'Viewers of a stream over every node serving it: the most watched streams only (metrics.streamSeries)',
    labelNames: ['group', 'stream'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const s of await read()) this.labels(s.group, s.stream).set(s.viewers);
    },
  });
  new Gauge({
    name: 'switchyard_stream_bitrate_bits_per_second',
    help: "The bit rate a stream's node receives from its publisher: the most watched streams only",
    labelNames: ['group', 'stream'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const s of await read()) if (s.bitrate !== null) this.labels(s.group, s.stream).set(s.bitrate);
    },
  });
}
