// Scheduled capacity (docs/scaling.md, "Schedules"): a node group's schedules raise or lower a
// role's min and max for windows that a cron expression starts, in a time zone, for a duration;
// e.g. warm an event's edges an hour before it starts. Pure: the clock is an argument; croner
// does the calendar arithmetic (time zones, daylight saving) and nothing else.
//
// A window is open at `now` when the schedule's most recent start at or before `now` is less
// than its duration ago. Where windows of a rule overlap, the largest min and the largest max of
// those that set them win; a max below the min is raised to it. The plan (capacity.ts) reads the
// rules as they are at `now`, so a window's opening is a min the plan meets at once, and its
// closing leaves the extra nodes to the rule's own scale-in and max.
import { Cron } from 'croner';
import type { RuleConfig, ScheduleConfig } from '../../config/types.js';
import { ruleKey } from '../../domain/scaling.js';

/** One schedule's open window. */
export interface OpenWindow {
  name: string;
  region: string;
  role: RuleConfig['role'];
  min?: number;
  max?: number;
  /** When it opened and when it closes (ms). */
  from: number;
  until: number;
}

const compiled = new Map<string, Cron>();

/** The cron expression in its time zone, compiled once (paused: it never fires anything). */
export function cronOf(cron: string, timezone: string): Cron {
  const key = `${timezone}\0${cron}`;
  let c = compiled.get(key);
  if (!c) {
    c = new Cron(cron, { timezone, paused: true });
    if (compiled.size > 1024) compiled.clear();
    compiled.set(key, c);
  }
  return c;
}

/** Why a cron expression or a time zone cannot be used, or null. */
export function scheduleProblem(cron: string, timezone: string): { field: 'cron' | 'timezone'; message: string } | null {
  try {
    new Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    return { field: 'timezone', message: `'${timezone}' is not a time zone: expected an IANA name such as UTC or Europe/Berlin` };
  }
  try {
    const c = new Cron(cron, { timezone, paused: true });
    if (c.nextRun(new Date(0)) === null) return { field: 'cron', message: 'never starts' };
  } catch (err) {
    return { field: 'cron', message: `is not a cron expression: ${(err as Error).message.replace(/^CronPattern: /, '')}` };
  }
  return null;
}

/** The windows open at `now`, one per schedule and region it applies to. */
export function openWindows(schedules: readonly ScheduleConfig[], rules: readonly RuleConfig[], now: number): OpenWindow[] {
  const out: OpenWindow[] = [];
  for (const s of schedules) {
    const [started] = cronOf(s.cron, s.timezone).previousRuns(1, new Date(now + 1));
    if (!started) continue;
    const from = started.getTime();
    if (now >= from + s.duration) continue;
    for (const r of rules) {
      if (r.role !== s.role || (s.region !== undefined && r.region !== s.region)) continue;
      out.push({ name: s.name, region: r.region, role: r.role, ...(s.min !== undefined ? { min: s.min } : {}), ...(s.max !== undefined ? { max: s.max } : {}), from, until: from + s.duration });
    }
  }
  return out;
}

/** A rule as its open windows make it: min and max as scheduled, and which windows did it. */
export interface ScheduledRule extends RuleConfig {
  /** The windows that set this rule's min or max now. */
  windows: OpenWindow[];
}

/** Every rule as it is at `now`. */
export function rulesAt(rules: readonly RuleConfig[], schedules: readonly ScheduleConfig[], now: number): ScheduledRule[] {
  if (schedules.length === 0) return rules.map((r) => ({ ...r, windows: [] }));
  const byRule = new Map<string, OpenWindow[]>();
  for (const w of openWindows(schedules, rules, now)) {
    const list = byRule.get(ruleKey(w)) ?? [];
    list.push(w);
    byRule.set(ruleKey(w), list);
  }
  return rules.map((r) => {
    const windows = byRule.get(ruleKey(r)) ?? [];
    if (windows.length === 0) return { ...r, windows };
    const mins = windows.flatMap((w) => (w.min !== undefined ? [w.min] : []));
    const maxes = windows.flatMap((w) => (w.max !== undefined ? [w.max] : []));
    const min = mins.length ? Math.max(...mins) : r.min;
    const max = Math.max(maxes.length ? Math.max(...maxes) : r.max, min);
    return { ...r, min, max, windows };
  });
}

/** The next start of each schedule after `now`, for status pages. */
export function nextStarts(schedules: readonly ScheduleConfig[], now: number): Array<{ name: string; next: number | null }> {
  return schedules.map((s) => ({ name: s.name, next: cronOf(s.cron, s.timezone).nextRun(new Date(now))?.getTime() ?? null }));
}
