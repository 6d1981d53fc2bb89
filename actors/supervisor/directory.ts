// The node groups the supervisor watches: each group's actor (a guarded remote over a port of
// their own), and what the actuator keeps of the group between ticks (its reconciliation with the
// platform, whether it is being deleted). What the planner remembers is the group's, kept by its
// actor (src/model/planner.ts). A group whose actor crashed is kept, marked gone, until the host
// attaches its successor; operations under way wait for it (current()).
import type { MessagePort } from 'node:worker_threads';
import type { NodeGroup } from '../../src/config/types.js';
import { guardedRemote, InFlight, nodeEndpoint } from '../comlink.js';
import type { GroupApi } from '../group/actor.js';

export interface Attached {
  group: NodeGroup;
  api: ReturnType<typeof guardedRemote<GroupApi>>;
  port: MessagePort;
  reconciled: boolean;
  /** Being deleted: retire every node, then report the group drained. */
  retiring: boolean;
  /** When to try reconciling with the platform again after a failure. */
  reconcileAfter: number;
  /** The group's actor thread died: skipped until the host attaches its successor. */
  gone: boolean;
}

export class Directory {
  private readonly groups = new Map<string, Attached>();
  /** Woken whenever a group actor is attached or detached. */
  private readonly waiters = new Set<() => void>();

  /** A group's (new) actor; what the supervisor kept of the group survives the change of actor. */
  attach(group: NodeGroup, port: MessagePort, retiring: boolean): Attached {
    const previous = this.groups.get(group.name);
    previous?.port.close();
    const inFlight = new InFlight();
    const attached: Attached = {
      group,
      api: guardedRemote<GroupApi>(nodeEndpoint(port), inFlight),
      port,
      reconciled: previous?.reconciled ?? false,
      retiring: retiring || (previous?.retiring ?? false),
      reconcileAfter: 0,
      gone: false,
    };
    port.once('close', () => {
      attached.gone = true;
      inFlight.fail(new Error('the group actor went away'));
    });
    this.groups.set(group.name, attached);
    this.changed();
    return attached;
  }

  detach(name: string): void {
    this.groups.get(name)?.port.close();
    this.groups.delete(name);
    this.changed();
  }

  get(name: string): Attached | undefined {
    return this.groups.get(name);
  }

  all(): Attached[] {
    return [...this.groups.values()];
  }

  names(): string[] {
    return [...this.groups.keys()];
  }

  /**
   * The current actor of a group: after a crash, its successor (which reloads the group's nodes
   * from LMDB) is waited for, so that what a platform operation finished is not lost with the
   * thread that asked for it. Undefined if the group is gone or did not come back in time.
   */
  async current(name: string, waitMs: number): Promise<Attached | undefined> {
    const deadline = Date.now() + waitMs;
    for (;;) {
      const attached = this.groups.get(name);
      if (!attached) return undefined;
      if (!attached.gone) return attached;
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      await this.next(left);
    }
  }

  private changed(): void {
    for (const wake of [...this.waiters]) wake();
  }

  /** Settles at the next attach or detach, or after `ms`. */
  private next(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }
}
