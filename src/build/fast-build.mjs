// `npm start`'s build: every TypeScript file of the service, its actors and the node agent
// transpiled to dist/ by esbuild, one file each (no bundling: the layout is tsc's, so worker
// threads and the local platform find their entry files where they always are), then the
// dashboard. Under a second where `tsc` took 20–40 s (bench/start.ts); type checking stays in
// `npm test` and `npm run lint`, which build with tsc. Plain JavaScript, because it runs before
// anything is compiled.
import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The browser app is bundled by the dashboard build, and declarations emit nothing. */
const skip = (path) => path.startsWith(join('src', 'dashboard', 'app')) || path.endsWith('.d.ts');

function sources(dir) {
  const out = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sources(path));
    else if (entry.name.endsWith('.ts') && !skip(path)) out.push(path);
  }
  return out;
}

/**
 * Only a source newer than its output is transpiled again: a build that is current (after
 * `npm run build`, or a second `npm start`) writes nothing, so nothing that watches dist/ or
 * holds its files is disturbed, and the start is quicker still.
 */
function stale(path) {
  const output = join(root, 'dist', path.replace(/\.ts$/, '.js'));
  try {
    return statSync(join(root, path)).mtimeMs > statSync(output).mtimeMs;
  } catch {
    return true;
  }
}

const started = performance.now();
const entryPoints = [...sources('src'), ...sources('actors')].filter(stale);
if (entryPoints.length > 0)
  await build({
    absWorkingDir: root,
    entryPoints,
    outdir: 'dist',
    outbase: '.',
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    logLevel: 'warning',
  });
const transpiled = performance.now() - started;
const { buildDashboard } = await import(join(root, 'dist', 'src', 'dashboard', 'build.js'));
await buildDashboard();
if (process.env.SWITCHYARD_BUILD_TIMES) {
  process.stderr.write(`fast build: ${entryPoints.length} files in ${Math.round(transpiled)} ms, the dashboard by ${Math.round(performance.now() - started)} ms\n`);
}
