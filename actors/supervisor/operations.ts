// Platform operations under way: creating and destroying nodes. Each is tracked (its node is
// left out of the plan until it ends) and survives a crash of its group's actor: what it finished
// is reported to the actor's successor. Whatever an operation fails with is an event, never the
// end of the supervisor's thread.
import { randomBytes } from 'node:crypto';
import type { EventBody } from '../../src/domain/events.js';
import type { PlatformData } from '../../src/domain/records.js';
import type { Role } from '../../src/domain/vocabulary.js';
import type { Platform } from '../../src/platforms/platform.js';
import type { NodeEvent } from '../../src/policy/states.js';
import type { NodeFacts } from '../../src/policy/scaling/facts.js';
import type { Attached, Directory } from './directory.js';

/** How long an operation waits for a crashed group actor's successor (its restart backs off to 5 s). */
export const ACTOR_RETURN_MS = 15_000;

export class Operations {
  /** Nodes with a platform operation under way. */
  readonly busy = new Set<string>();
  private readonly underWay = new Set<Promise<unknown>>();

  constructor(
    private readonly groups: Directory,
    private readonly emit: (events: EventBody[]) => void,
    /** Called when an operation ends: the supervisor plans again. */
    private readonly ended: () => void,
    /** Whether the supervisor still runs (a stopping one does not wait for successors). */
    private readonly running: () => boolean,
  ) {}

  /** Records a node and has the platform create it. */
  async create(attached: Attached, platform: Platform, role: Role, region: string, now: number): Promise<void> {
    const id = `${region}-${role}-${randomBytes(3).toString('hex')}`.slice(-32);
    const data = platform.prepare(attached.group, { id, role, region });
    if (!(await attached.api.addNodes([{ id, role, region, platform: data }], now))) return;
    const name = attached.group.name;
    this.track(
      name,
      id,
      (async () => {
        await this.nodeEvent(name, id, { type: 'provision' });
        let created: PlatformData;
        try {
          created = await platform.create(attached.group, { id, role, region, platform: data });
        } catch (err) {
          this.emit([{ type: 'platform.error', group: name, nodeId: id, operation: 'create', message: (err as Error).message }]);
          await this.nodeEvent(name, id, { type: 'fault', reason: `create failed: ${(err as Error).message}` });
          return;
        }
        await this.nodeEvent(name, id, { type: 'created' }, { platform: created });
      })(),
    );
  }

  /** Has the platform destroy a node, then removes its record. */
  destroy(attached: Attached, platform: Platform, node: NodeFacts): void {
    const name = attached.group.name;
    this.track(
      name,
      node.id,
      (async () => {
        await this.nodeEvent(name, node.id, { type: 'destroying' });
        try {
          await platform.destroy(node);
        } catch (err) {
          this.emit([{ type: 'platform.error', group: name, nodeId: node.id, operation: 'destroy', message: (err as Error).message }]);
          return;
        }
        await this.nodeEvent(name, node.id, { type: 'destroyed' });
      })(),
    );
  }

  /** Destroys resources of a node LMDB does not know (found at reconciliation). */
  removeOrphan(group: string, platform: Platform, id: string): void {
    this.emit([{ type: 'platform.error', group, nodeId: id, operation: 'reconcile', message: 'resources of an unknown node on the platform: destroying them' }]);
    this.track(
      group,
      id,
      platform.removeOrphan(id).catch((err: Error) => this.emit([{ type: 'platform.error', group, nodeId: id, operation: 'destroy', message: err.message }])),
    );
  }

  /** Settles when every operation under way has ended. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.underWay]);
  }

  /** A node's event, to whichever actor of its group is current when it is sent. */
  private async nodeEvent(name: string, id: string, event: NodeEvent, patch?: { platform?: PlatformData }): Promise<void> {
    for (;;) {
      const attached = await this.groups.current(name, this.running() ? ACTOR_RETURN_MS : 0);
      if (!attached) throw new Error(`the actor of node group '${name}' did not come back; node ${id} missed '${event.type}'`);
      try {
        await attached.api.nodeEvent(id, event, Date.now(), patch);
        return;
      } catch (err) {
        if (!attached.gone) throw err;
      }
    }
  }

  private track(group: string, id: string, op: Promise<void>): void {
    this.busy.add(id);
    const tracked = op
      .catch((err: Error) => this.emit([{ type: 'platform.error', group, nodeId: id, operation: 'supervise', message: err.message }]))
      .finally(() => {
        this.busy.delete(id);
        this.underWay.delete(tracked);
        this.ended();
      });
    this.underWay.add(tracked);
  }
}
