// The event log across kills (docs/persistence.md), as the torture checks it. One client follows the event
// stream through every run, resuming after each restart with Last-Event-ID as a browser's
// EventSource does; after each kill the LMDB file is compared with what it was sent:
// - ids only grow, and none is sent twice;
// - every event sent is in the log, under the id it was sent with, with the same content (an id
//   the client has seen never names another event);
// - every logged event up to the last id the client has seen was sent to it (a client that
//   resumes never silently skips one).
import { openStore } from '../../src/store/store.js';
import { follow, type Follower } from '../helpers/follow.js';

/** An event as JSON with its keys in order, so that what was sent and what was stored compare. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v));
}

export class EventWatch {
  /** Every event sent with an id, as sent. */
  private readonly sent = new Map<number, string>();
  private lastId: number | undefined;
  private follower: Follower | null = null;
  /** Events received, over every run. */
  received = 0;
  /** Ids already reported broken: each is reported once, not after every later kill too. */
  private readonly reported = new Set<number>();

  /** Follows the service that just started: from the beginning, then from where the client left off. */
  start(url: string, token: string): void {
    this.follower = follow(url, token, this.lastId);
  }

  /** Once the service is gone: takes in what the client got, and lists what breaks the rules. */
  async stop(): Promise<string[]> {
    if (!this.follower) return [];
    const follower = this.follower;
    this.follower = null;
    await follower.close();
    const problems: string[] = [];
    for (const { id, event } of follower.frames) {
      this.received += 1;
      if (id === undefined) continue;
      if (this.lastId !== undefined && id <= this.lastId) problems.push(`event id ${id} was sent after id ${this.lastId}: ids must only grow (${event.type})`);
      if (this.sent.has(id)) problems.push(`event id ${id} was sent twice`);
      this.sent.set(id, canonical(event));
      this.lastId = Math.max(this.lastId ?? 0, id);
    }
    return problems;
  }

  /** Compares the log left in `dataDir` (the service stopped or killed) with what was sent. */
  async check(dataDir: string): Promise<string[]> {
    const problems: string[] = [];
    const report = (id: number, problem: string) => {
      if (this.reported.has(id)) return;
      this.reported.add(id);
      problems.push(problem);
    };
    const store = openStore(dataDir);
    try {
      let first: number | undefined;
      for (const { key, value } of store.events.getRange()) {
        const id = key as number;
        first ??= id;
        const sent = this.sent.get(id);
        if (sent !== undefined && sent !== canonical(value)) report(id, `event id ${id} was sent as ${sent.slice(0, 160)} and is logged as ${canonical(value).slice(0, 160)}`);
        if (sent === undefined && this.lastId !== undefined && id <= this.lastId) report(id, `logged event ${id} (${value.type}) was never sent to the client, which has seen up to ${this.lastId}`);
      }
      // The log is trimmed from its oldest end only: every id sent from its first on is in it.
      for (const id of this.sent.keys()) {
        if (first !== undefined && id >= first && store.events.get(id) === undefined) report(id, `event id ${id} was sent but is not in the log`);
      }
    } finally {
      await store.close();
    }
    return problems;
  }
}
