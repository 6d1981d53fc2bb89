// The layering ARCHITECTURE.md states, checked: every relative import in src/ and actors/ goes to
// its own layer or one below, never up. A small checker of our own (the rule is ten lines; a
// dependency-cruiser config would be longer): it reads the sources, not dist/, so a type-only
// import counts as much as any other, except where the rule says.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import test from 'ava';
import { projectPath } from '../../src/paths.js';

/** Bottom first. A unit is a folder of src/ (or a file at its top), actors/, or a sub-folder named apart. */
const LAYERS: ReadonlyArray<readonly string[]> = [
  ['domain', 'paths'], // the product's words, records and constants
  ['schemas'], // wire shapes (TypeBox)
  ['policy'], // pure decisions: selection, scaling, leases, tokens' scope, Terraform requests
  ['config'], // the settings: schemas, loading, checks
  ['model'], // a node group's state, pure
  ['os', 'store', 'outbound', 'geo', 'events', 'dashboard'], // adapters: processes, disk, network, files
  ['auth', 'admission', 'webhooks', 'observability', 'platforms', 'cluster'], // services built on them
  ['actors'], // worker threads: group actors, the supervisor, their host
  ['nodegroups'], // node groups as the API changes them
  ['http'], // the front end
  ['compat', 'dashboard/app'], // mounted on it: Red5 SM2's API, the browser app
  // The composition root (src/root/ and src/main.ts: it wires everything) and the
  // programs of their own (the CLI, the node agent, npm start's build).
  ['root', 'main', 'service', 'cli', 'agent', 'build'],
];

/** Policy may name the settings' types (what a rule or a group is), never run the config's code. */
const TYPE_ONLY_EXCEPTIONS = [{ from: 'policy', to: 'config' }];

/** Worker entry files: their types and code are the actors' own (src/ asks through a handle). */
const WORKER_ENTRIES = ['actors/group/actor.ts', 'actors/supervisor/actor.ts', 'actors/spare.ts'];

function unitOf(file: string): string {
  const parts = file.split('/');
  if (parts[0] === 'actors') return 'actors';
  if (parts[1] === 'dashboard' && parts[2] === 'app') return 'dashboard/app';
  return parts.length > 2 ? parts[1]! : parts[1]!.replace(/\.tsx?$/, '');
}

const layerOf = (unit: string): number => LAYERS.findIndex((l) => l.includes(unit));

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(projectPath(dir), { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...sources(path));
    else if (/\.tsx?$/.test(entry.name) && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

interface Import {
  from: string;
  to: string;
  typeOnly: boolean;
  line: string;
}

function importsOf(file: string): Import[] {
  const text = readFileSync(projectPath(file), 'utf8');
  const out: Import[] = [];
  const pattern = /^(import|export)\s+(type\s+)?[^;]*?from\s+['"](\.[^'"]+)['"]|import\(['"](\.[^'"]+)['"]\)/gm;
  for (const m of text.matchAll(pattern)) {
    const spec = m[3] ?? m[4]!;
    const to = normalize(join(dirname(file), spec)).replace(/\.js$/, '.ts');
    out.push({ from: file, to, typeOnly: m[2] !== undefined, line: m[0].split('\n')[0]! });
  }
  return out;
}

const files = [...sources('src'), ...sources('actors')];

test('every unit of the tree has a layer', (t) => {
  const units = new Set(files.map(unitOf));
  t.deepEqual(
    [...units].filter((u) => layerOf(u) < 0),
    [],
    'a new folder needs a place in LAYERS (and in ARCHITECTURE.md)',
  );
});

test('no import goes up a layer', (t) => {
  const wrong: string[] = [];
  for (const file of files) {
    for (const i of importsOf(file)) {
      if (!i.to.startsWith('src/') && !i.to.startsWith('actors/')) continue;
      const [a, b] = [unitOf(i.from), unitOf(i.to)];
      if (layerOf(b) <= layerOf(a)) continue;
      if (i.typeOnly && TYPE_ONLY_EXCEPTIONS.some((e) => e.from === a && e.to === b)) continue;
      wrong.push(`${i.from} (${a}) → ${i.to} (${b}): ${i.line}`);
    }
  }
  t.deepEqual(wrong, []);
});

test("a worker thread's entry file is imported by the actors alone", (t) => {
  const wrong = files.flatMap((file) =>
    importsOf(file)
      .filter((i) => WORKER_ENTRIES.includes(i.to) && !i.from.startsWith('actors/'))
      .map((i) => `${i.from}: ${i.line}`),
  );
  t.deepEqual(wrong, []);
});

/** The files a file loads when it is loaded: static imports that survive compilation, followed through the tree. */
function loadedWith(entry: string): Set<string> {
  const seen = new Set<string>([entry]);
  const pattern = /^(import|export)\s+(?!type\s)[^;]*?from\s+['"](\.[^'"]+)['"]/gm;
  for (const file of seen) {
    for (const m of readFileSync(projectPath(file), 'utf8').matchAll(pattern)) {
      // `import { type A, type B } from …`: every name a type, so nothing is loaded.
      if (/^(import|export)\s+\{(\s*type\s[^,}]+,?)+\s*\}/.test(m[0])) continue;
      seen.add(normalize(join(dirname(file), m[2]!)).replace(/\.js$/, '.ts'));
    }
  }
  return seen;
}

test("the actors' threads load no schema library: TypeBox's hundreds of modules take half a second to load in each thread", (t) => {
  for (const entry of ['actors/group/actor.ts', 'actors/supervisor/actor.ts']) {
    const loaders = [...loadedWith(entry)].filter((file) => /^(import|export)\s+(?!type\s)[^;]*?from\s+['"]typebox/m.test(readFileSync(projectPath(file), 'utf8')));
    t.deepEqual(loaders, [], `${entry} loads TypeBox through these files`);
  }
  t.true(loadedWith('actors/group/actor.ts').has('src/store/store.ts'), 'the walk follows imports');
});

test('the checker sees an import that goes up (it can fail)', (t) => {
  const up = { from: 'src/policy/x.ts', to: 'src/http/app.ts' };
  t.true(layerOf(unitOf(up.to)) > layerOf(unitOf(up.from)));
  t.true(importsOf('src/model/planner.ts').some((i) => i.to === 'src/policy/scaling/memory.ts'));
});
