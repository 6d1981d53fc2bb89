// `npm run bench`: every bench, one after another, each printing its own table.
import { spawnSync } from 'node:child_process';
import { projectPath } from '../src/paths.js';

const BENCHES = ['lookup'];
let failed = false;
for (const name of BENCHES) {
  const r = spawnSync(process.execPath, [projectPath('dist', 'bench', `${name}.js`)], { stdio: 'inherit' });
  if (r.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
