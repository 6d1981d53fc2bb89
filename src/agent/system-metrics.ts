// What every node agent reports about its machine (docs/nodes.md, "Metrics nodes report"), for
// both back ends. `cpu.usage` is the same load as a percentage, the name Red5 Pro Stream Manager
// 2.0's node-group configs use (`avg(cpu.usage) > 55.0`), so that they work here unchanged.
import { cpus, freemem, loadavg, totalmem } from 'node:os';

const hundredths = (n: number) => Math.round(n * 100) / 100;

export function systemMetrics(): Record<string, number> {
  const load = loadavg()[0]! / Math.max(1, cpus().length);
  return {
    'cpu.load': hundredths(load),
    'cpu.usage': hundredths(Math.min(100, load * 100)),
    'memory.used': hundredths(1 - freemem() / totalmem()),
  };
}
