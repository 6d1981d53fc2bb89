// `npm run torture -- [--cycles 50] [--seed N]`: the long form of the crash-consistency run.
// Exits 1 if anything acknowledged (or revealed) was lost, the store was found inconsistent, or the
// event log broke its rules.
import { parseArgs } from 'node:util';
import { torture } from './torture.js';

const { values } = parseArgs({ options: { cycles: { type: 'string', default: '50' }, seed: { type: 'string' }, workers: { type: 'string' } } });
const cycles = Number(values.cycles);
if (!Number.isInteger(cycles) || cycles < 1) {
  console.error(`--cycles ${values.cycles}: expected a whole number of at least 1`);
  process.exit(2);
}
const started = Date.now();
const report = await torture({
  cycles,
  ...(values.seed !== undefined ? { seed: Number(values.seed) } : {}),
  ...(values.workers !== undefined ? { workers: Number(values.workers) } : {}),
  log: (line) => console.log(line),
});
const sum = (f: (c: (typeof report.cycles)[number]) => number) => report.cycles.reduce((a, c) => a + f(c), 0);
console.log('');
console.log(`seed ${report.seed}; ${cycles} kills (${report.cycles.filter((c) => c.killed === 'start').length} while starting) in ${((Date.now() - started) / 1000).toFixed(0)} s`);
console.log(
  `writes acknowledged ${sum((c) => c.acknowledged)}, answers that revealed a key ${sum((c) => c.revealed)}, cut off by a kill ${sum((c) => c.cutOff)}, refused ${sum((c) => c.refused)}; keys checked after restarts ${sum((c) => c.checked)}`,
);
console.log(`events followed across the kills ${report.eventsReceived}`);
console.log(`losses ${report.losses.length}, inconsistencies ${report.inconsistencies.length}, event log problems ${report.eventProblems.length}`);
for (const l of [...report.losses, ...report.inconsistencies, ...report.eventProblems]) console.log(`  ${l}`);
process.exit(report.losses.length + report.inconsistencies.length + report.eventProblems.length === 0 ? 0 : 1);
