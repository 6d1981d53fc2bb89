// The embedded default never loads NATS (docs/cluster.md): no module the service or a group
// actor imports statically reaches src/cluster, cluster mode's wiring (src/root/cluster.ts) or a
// @nats-io package; cluster mode's code comes in only through the dynamic imports that a
// `cluster` setting makes.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import test from 'ava';
import { projectPath } from '../../src/paths.js';

/** Every module reachable from `entry` through static imports (type-only imports are gone from the JavaScript). */
function staticGraph(entry: string): Set<string> {
  const seen = new Set<string>();
  const todo = [entry];
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    if (!file.endsWith('.js') || !file.startsWith(projectPath('dist'))) continue;
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]/gm)) {
      const spec = m[1] ?? m[2]!;
      if (spec.startsWith('.')) {
        const target = resolve(dirname(file), spec);
        if (existsSync(target)) todo.push(target);
      } else seen.add(`package:${spec}`);
    }
  }
  return seen;
}

test('the service and its actors import nothing of NATS or of src/cluster statically', (t) => {
  for (const entry of [join('src', 'main.js'), join('actors', 'group', 'actor.js'), join('actors', 'supervisor', 'actor.js'), join('src', 'agent', 'main.js')]) {
    const graph = [...staticGraph(projectPath('dist', entry))];
    t.true(graph.length > 10, `${entry}: ${graph.length} modules`);
    t.deepEqual(
      graph.filter((m) => m.includes('@nats-io') || m.includes(`${join('src', 'cluster')}/`) || m.endsWith(join('src', 'root', 'cluster.js'))),
      [],
      entry,
    );
  }
  // And the walker does see them when they are imported: cluster mode's wiring imports NATS.
  t.true([...staticGraph(projectPath('dist', 'src', 'root', 'cluster.js'))].some((m) => m.includes('@nats-io')));
});
