// The list of files the service may serve for the dashboard and the API docs page, written by
// the build (build.ts) and read by the server (src/http/static-pages.ts). Only the URLs listed
// here are served, each from the file the build named: nothing in a request becomes a path.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectPath } from '../paths.js';

/** Which page a document is: each has its own Content-Security-Policy (security-headers.ts). */
export type PageKind = 'dashboard' | 'docs';

export interface ManifestEntry {
  /** The URL path it answers, exactly: /dashboard/assets/app-3F2K7Q.js. */
  url: string;
  /** Its file, relative to the build directory. */
  file: string;
  /** A gzip-compressed copy, when compression pays. */
  gzip?: string;
  type: string;
  /** A page (HTML, never cached) or an asset (content-hashed name, cached for good). */
  page?: PageKind;
  /** A short hash of the content: the asset's ETag. */
  hash: string;
}

export interface Manifest {
  version: 1;
  entries: ManifestEntry[];
}

/** Where `npm run build` puts the dashboard: dist/dashboard/ of the project. */
export const DASHBOARD_DIR = projectPath('dist', 'dashboard');
export const MANIFEST_FILE = 'manifest.json';

export interface LoadedEntry extends ManifestEntry {
  body: Buffer;
  gzipBody?: Buffer;
}

/** Reads the manifest and every file it lists (a few MB at most: swagger-ui is most of it). */
export function loadManifest(dir: string = DASHBOARD_DIR): Map<string, LoadedEntry> {
  const manifest = JSON.parse(readFileSync(join(dir, MANIFEST_FILE), 'utf8')) as Manifest;
  if (manifest.version !== 1 || !Array.isArray(manifest.entries)) throw new Error(`${MANIFEST_FILE}: not a version 1 manifest`);
  const out = new Map<string, LoadedEntry>();
  for (const e of manifest.entries) {
    out.set(e.url, { ...e, body: readFileSync(join(dir, e.file)), ...(e.gzip ? { gzipBody: readFileSync(join(dir, e.gzip)) } : {}) });
  }
  return out;
}
