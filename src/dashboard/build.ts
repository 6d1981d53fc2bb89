// Builds the dashboard (/dashboard/) and the API docs page (/as/v1/docs) into dist/dashboard/:
// the Preact app bundled by esbuild, swagger-ui's prebuilt files copied from its npm package,
// every asset under a content-hashed name (so it can be cached for good), the two HTML pages,
// and the manifest that is the whole list of what the service will serve. Run by `npm run build`.
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename, extname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { projectPath } from '../paths.js';
import { DASHBOARD_DIR, MANIFEST_FILE, type Manifest, type ManifestEntry, type PageKind } from './manifest.js';

const APP = projectPath('src', 'dashboard', 'app');
const ASSET_URL = '/dashboard/assets/';
const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.html': 'text/html; charset=utf-8',
};
/** Below this, gzip saves less than the header costs. */
const GZIP_FROM = 1024;

const shortHash = (data: Buffer | string) => createHash('sha256').update(data).digest('base64url').slice(0, 10);

/** swagger-ui's browser bundle and stylesheet, from the swagger-ui-dist package. */
function swaggerFile(name: string): Buffer {
  const dir = createRequire(import.meta.url)
    .resolve('swagger-ui-dist/package.json')
    .replace(/package\.json$/, '');
  // Their source maps are not shipped with them: drop the reference, which would only 404.
  return Buffer.from(readFileSync(join(dir, name), 'utf8').replace(/\n?\/[/*]# sourceMappingURL=\S+(\s*\*\/)?\s*$/, '\n'));
}

function page(title: string, styles: string[], script: string, body: string, icon: string): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="color-scheme" content="light dark">',
    `<title>${title}</title>`,
    `<link rel="icon" href="${icon}" type="image/svg+xml">`,
    ...styles.map((href) => `<link rel="stylesheet" href="${href}">`),
    `<script type="module" src="${script}"></script>`,
    '</head>',
    `<body>${body}</body>`,
    '</html>',
    '',
  ].join('\n');
}

export async function buildDashboard(out: string = DASHBOARD_DIR): Promise<Manifest> {
  rmSync(out, { recursive: true, force: true });
  const assets = join(out, 'assets');
  mkdirSync(assets, { recursive: true });
  const entries: ManifestEntry[] = [];
  const add = (file: string, url: string, pageKind?: PageKind) => {
    const body = readFileSync(join(out, file));
    const type = TYPES[extname(file)] ?? 'application/octet-stream';
    const entry: ManifestEntry = { url, file, type, hash: shortHash(body), ...(pageKind ? { page: pageKind } : {}) };
    if (body.length >= GZIP_FROM && type !== 'image/png') {
      writeFileSync(join(out, `${file}.gz`), gzipSync(body));
      entry.gzip = `${file}.gz`;
    }
    entries.push(entry);
  };
  const copyHashed = (name: string, data: Buffer) => {
    const file = `${basename(name, extname(name))}-${shortHash(data)}${extname(name)}`;
    writeFileSync(join(assets, file), data);
    add(`assets/${file}`, ASSET_URL + file);
    return ASSET_URL + file;
  };

  const result = await build({
    entryPoints: [join(APP, 'main.tsx'), join(APP, 'docs.ts')],
    tsconfig: join(APP, 'tsconfig.json'),
    outdir: assets,
    entryNames: '[name]-[hash]',
    bundle: true,
    format: 'esm',
    target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
    minify: true,
    sourcemap: 'linked',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    metafile: true,
    logLevel: 'warning',
  });
  const urlOf: Record<string, string> = {};
  for (const [path, output] of Object.entries(result.metafile.outputs)) {
    const file = relative(out, path);
    add(file, ASSET_URL + relative(assets, path));
    if (output.entryPoint) urlOf[basename(output.entryPoint)] = ASSET_URL + relative(assets, path);
    if (output.entryPoint && output.cssBundle) urlOf[`${basename(output.entryPoint)}.css`] = ASSET_URL + relative(assets, output.cssBundle);
  }
  const icon = copyHashed('icon.svg', readFileSync(join(APP, 'icon.svg')));
  const swaggerCss = copyHashed('swagger-ui.css', swaggerFile('swagger-ui.css'));
  const swaggerJs = copyHashed('swagger-ui-bundle.js', swaggerFile('swagger-ui-bundle.js'));

  writeFileSync(join(out, 'index.html'), page('Switchyard', [urlOf['main.tsx.css']!], urlOf['main.tsx']!, '<noscript>The Switchyard dashboard needs JavaScript.</noscript><div id="app"></div>', icon));
  add('index.html', '/dashboard/', 'dashboard');
  // swagger-ui's bundle is a classic script that defines SwaggerUIBundle; docs.ts starts it.
  writeFileSync(
    join(out, 'docs.html'),
    page(
      'Switchyard API',
      [swaggerCss, urlOf['docs.ts.css'] ?? ''].filter(Boolean),
      urlOf['docs.ts']!,
      `<header class="docs-top"><strong>Switchyard API</strong><a href="/dashboard/">Dashboard</a><a href="/as/v1/openapi.json">openapi.json</a></header><div id="swagger-ui"></div><script src="${swaggerJs}"></script>`,
      icon,
    ),
  );
  add('docs.html', '/as/v1/docs', 'docs');

  const manifest: Manifest = { version: 1, entries };
  writeFileSync(join(out, MANIFEST_FILE), `${JSON.stringify(manifest, null, 1)}\n`);
  return manifest;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const started = performance.now();
  const manifest = await buildDashboard();
  const bytes = manifest.entries.reduce((a, e) => a + readFileSync(join(DASHBOARD_DIR, e.file)).length, 0);
  console.log(`dashboard: ${manifest.entries.length} files, ${(bytes / 1024).toFixed(0)} KiB, in ${Math.round(performance.now() - started)} ms (${relative(process.cwd(), DASHBOARD_DIR)})`);
}
