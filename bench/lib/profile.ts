// Reads V8 .cpuprofile files (from --cpu-prof) into self time by function and by file.
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

export interface Hotspot {
  name: string;
  share: number;
}

export function summarize(file: string, top = 25): { total: number; functions: Hotspot[]; files: Hotspot[] } {
  const p = JSON.parse(readFileSync(file, 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  const files = new Map<string, number>();
  let total = 0;
  p.samples.forEach((id, i) => {
    const n = byId.get(id)!;
    const d = p.timeDeltas[i] ?? 0;
    total += d;
    const f = n.callFrame;
    const where =
      f.url
        .replace(/^file:\/\//, '')
        .replace(/^.*\/node_modules\//, '')
        .replace(/^.*\/dist\//, '') || '(native)';
    const fn = `${f.functionName || '(anonymous)'} ${where}:${f.lineNumber + 1}`;
    self.set(fn, (self.get(fn) ?? 0) + d);
    const pkg = where.startsWith('node:')
      ? where
      : where
          .split('/')
          .slice(0, where.startsWith('@') ? 2 : 1)
          .join('/');
    files.set(pkg, (files.get(pkg) ?? 0) + d);
  });
  const rank = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, v]) => ({ name, share: v / total }));
  return { total, functions: rank(self), files: rank(files) };
}
