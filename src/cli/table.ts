// Output for people: aligned columns, short times. Scripts use --json instead, which prints the
// API's JSON unchanged.

export type Cell = string | number | boolean | null | undefined;

/** Columns padded to their widest cell; numbers right-aligned; null and undefined as '-'. */
export function table(header: readonly string[], rows: ReadonlyArray<readonly Cell[]>): string {
  const text = (c: Cell) => (c === null || c === undefined || c === '' ? '-' : String(c));
  const cells = rows.map((r) => r.map(text));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => r[i]?.length ?? 0)));
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((r) => typeof r[i] === 'number' || r[i] === null || r[i] === undefined));
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : i === r.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...cells.map(line)].join('\n');
}

/** "12s ago", "3m ago", or '-' for a time never set. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '-';
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 120) return `${s}s ago`;
  if (s < 7200) return `${Math.round(s / 60)}m ago`;
  return `${Math.round(s / 3600)}h ago`;
}

export const percent = (part: number, whole: number) => (whole > 0 ? `${Math.round((100 * part) / whole)}%` : '-');

export function out(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** Progress and notices: stderr, so that stdout stays what a script reads. */
export function note(text: string): void {
  process.stderr.write(`${text}\n`);
}

export function json(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}
