// Every answer a bench got, by kind of request and status, judged as it arrives: expected,
// tolerated (a status the service may legitimately give in that situation, with the reason), or
// unexpected (with the first bodies, for the report).
export type Verdict = 'ok' | 'tolerated' | 'unexpected';

export interface Finding {
  kind: string;
  status: string;
  code: string;
  why: string;
  count: number;
  firstAt: number;
  lastAt: number;
  samples: string[];
}

const SAMPLES = 3;

/** The problem code of a problem+json body, or '' (cheap: no JSON parse on the hot path). */
export function problemCode(body: string | undefined): string {
  if (!body) return '';
  const i = body.indexOf('"code":"');
  if (i < 0) return '';
  return body.slice(i + 8, body.indexOf('"', i + 8));
}

export class Statuses {
  /** kind → status → count */
  readonly counts = new Map<string, Map<string, number>>();
  readonly tolerated = new Map<string, Finding>();
  readonly unexpected = new Map<string, Finding>();
  unexpectedTotal = 0;
  toleratedTotal = 0;

  constructor(private readonly now: () => number = Date.now) {}

  record(kind: string, status: number | string, verdict: Verdict, why = '', body?: string): void {
    const s = String(status);
    let byStatus = this.counts.get(kind);
    if (!byStatus) this.counts.set(kind, (byStatus = new Map()));
    byStatus.set(s, (byStatus.get(s) ?? 0) + 1);
    if (verdict === 'ok') return;
    const code = problemCode(body);
    const key = `${kind}|${s}|${code}|${why}`;
    const into = verdict === 'tolerated' ? this.tolerated : this.unexpected;
    if (verdict === 'tolerated') this.toleratedTotal++;
    else this.unexpectedTotal++;
    const at = this.now();
    let f = into.get(key);
    if (!f) into.set(key, (f = { kind, status: s, code, why, count: 0, firstAt: at, lastAt: at, samples: [] }));
    f.count++;
    f.lastAt = at;
    if (f.samples.length < SAMPLES && body !== undefined) f.samples.push(body.slice(0, 400));
  }

  total(kind?: string): number {
    let n = 0;
    for (const [k, m] of this.counts) if (kind === undefined || k === kind) for (const c of m.values()) n += c;
    return n;
  }
}
