// `npm run bench`: every bench, one after another, each printing its own table.
import { spawnSync } from 'node:child_process';
import { projectPath } from '../src/paths.js';

/** Each bench, with the Node options it needs (the selection bench holds a million bindings). */
const BENCHES: Array<[string, string[]]> = [
  ['lookup', []],
  ['heartbeats', []],
  ['selection', ['--max-old-space-size=8192', '--expose-gc']],
  ['restart', ['--max-old-space-size=8192', '--expose-gc']],
  ['failover', []],
  ['actors', []],
  ['webrtc', []],
  ['admission', []],
];
let failed = false;
for (const [name, nodeArgs] of BENCHES) {
  const r = spawnSync(process.execPath, [...nodeArgs, projectPath('dist', 'bench', `${name}.js`)], { stdio: 'inherit' });
  if (r.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
