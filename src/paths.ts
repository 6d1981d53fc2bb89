// Where the project's own files are, whether running from dist/ (compiled) or elsewhere.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the project root (no package.json above this file)');
    dir = up;
  }
  return dir;
}

export const PROJECT_ROOT = findRoot();

export const projectPath = (...parts: string[]): string => join(PROJECT_ROOT, ...parts);
