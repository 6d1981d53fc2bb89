// Node groups: where their definitions live and how they change (docs/api.md, docs/persistence.md). Every group
// is stored in LMDB. The config file seeds groups and updates those it owns when its text of
// them changes; a group changed through the API keeps the API's version (a later file change is
// logged, not applied). Deleting a group drains and destroys its nodes in the background, and
// only then removes the group and its records.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { ActorHost } from '../../actors/host.js';
import type { GroupHandle } from '../../actors/group-handle.js';
import type { NodeGroup } from '../config/types.js';
import type { Failure } from '../domain/failure.js';
import { normalizeNodeGroup } from '../config/node-group.js';
import { keepSecrets } from '../config/secrets.js';
import type { EventBody } from '../domain/events.js';
import type { FieldError } from '../schemas/validate.js';
import { appliedKey, clearGroup, type StoredGroup, type Store } from '../store/store.js';
import { stored } from '../store/failures.js';
import type { TerraformModules } from '../policy/terraform/requests.js';

export type Change = { ok: true; group: NodeGroup } | Failure;

/**
 * Cluster mode (src/root/cluster.ts): group definitions shared by every instance, each written
 * by compare-and-set. The instance that changes a group writes it there; every instance (that one
 * too) applies what it sees through `adopt`.
 */
export interface GroupSharing {
  get(name: string): Promise<StoredGroup | undefined>;
  /** False if the record changed (or, for a new one, appeared) elsewhere since it was read. */
  put(name: string, record: StoredGroup): Promise<boolean>;
  remove(name: string): Promise<void>;
}

const fingerprint = (g: NodeGroup) => createHash('sha256').update(JSON.stringify(g)).digest('hex');

export class NodeGroupRegistry {
  private readonly creating = new Set<string>();
  private sharing: GroupSharing | null = null;

  constructor(
    private readonly store: Store,
    private readonly actors: ActorHost,
    private readonly log: Logger,
    private readonly emit: (events: EventBody[]) => void,
    /** The installed Terraform modules, which a terraform group's settings are checked against. */
    private readonly terraform: TerraformModules,
    /**
     * The metric names a new or replaced group's expressions may read (src/domain/metrics.ts).
     * Stored groups are not checked against them: a group accepted once keeps running.
     */
    private readonly metrics?: ReadonlySet<string>,
  ) {}

  /** At start: the groups to run, from LMDB and the config file. */
  async load(fromFile: readonly NodeGroup[]): Promise<Array<{ group: NodeGroup; deleting: boolean }>> {
    const now = Date.now();
    for (const g of fromFile) {
      const hash = fingerprint(g);
      const stored = this.store.groups.get(g.name);
      if (!stored) {
        await this.store.groups.put(g.name, { spec: g, source: 'config', configHash: hash, updatedAt: now });
      } else if (stored.configHash !== hash) {
        const held = this.droppedRegionsInUse(g.name, g);
        if (stored.source === 'config' && held.length > 0) {
          // Kept as it was (the file's hash is not recorded, so the next start tries again).
          this.log.error({ group: g.name }, `node group not updated from the config file: ${droppedRegionsDetail(g.name, held)}`);
        } else if (stored.source === 'config') {
          await this.store.groups.put(g.name, { ...stored, spec: g, configHash: hash, updatedAt: now });
          this.log.info({ group: g.name }, 'node group updated from the config file');
        } else {
          await this.store.groups.put(g.name, { ...stored, configHash: hash });
          this.log.warn({ group: g.name }, 'node group changed in the config file, but was changed through the API since: the API version stays');
        }
      }
    }
    const names = new Set(fromFile.map((g) => g.name));
    const out: Array<{ group: NodeGroup; deleting: boolean }> = [];
    for (const { key, value } of this.store.groups.getRange()) {
      const name = key as string;
      const normalized = normalizeNodeGroup(value.spec, this.terraform, { stored: true });
      if ('errors' in normalized) {
        this.log.error({ group: name, errors: normalized.errors }, 'a stored node group is no longer valid; it is not started');
        continue;
      }
      if (value.source === 'config' && !names.has(name) && !value.deleting) {
        this.log.warn({ group: name }, 'node group came from the config file but is no longer in it; it keeps running (DELETE /as/v1/nodegroups/{name} retires it)');
      }
      out.push({ group: normalized.group, deleting: value.deleting === true });
    }
    await this.store.durable();
    return out;
  }

  /** Stores a group's record (in cluster mode, first shared, by compare-and-set): false if another instance changed it meanwhile. */
  private async persist(name: string, record: StoredGroup): Promise<boolean> {
    if (this.sharing) {
      await this.sharing.get(name);
      if (!(await this.sharing.put(name, record))) return false;
    }
    await stored(() => this.store.groups.put(name, record), this.store.guard);
    await stored(this.store.durable());
    return true;
  }

  /** Cluster mode: groups this instance has and the cluster lacks (the config file's, at first start) are shared. */
  async share(sharing: GroupSharing): Promise<void> {
    this.sharing = sharing;
    for (const { key, value } of this.store.groups.getRange()) {
      const name = key as string;
      if ((await sharing.get(name)) === undefined) await sharing.put(name, value);
    }
  }

  /**
   * Cluster mode: a group as the cluster holds it now (null: deleted), from any instance: kept
   * locally, listed (its actor runs where it is owned), reconfigured, retired or removed here too.
   */
  async adopt(name: string, value: unknown): Promise<void> {
    const handle = this.actors.group(name);
    if (value === null) {
      if (!handle) return;
      await this.actors.removeGroup(name);
      await this.forget(name);
      return;
    }
    const record = value as StoredGroup;
    const normalized = normalizeNodeGroup(record.spec, this.terraform, { stored: true });
    if ('errors' in normalized) return void this.log.error({ group: name, errors: normalized.errors }, 'a shared node group is not valid here; it is not served by this instance');
    const group = normalized.group;
    await stored(() => this.store.groups.put(name, record), this.store.guard).catch(() => {});
    if (!handle) await this.actors.listGroup(group);
    else if (fingerprint(handle.group) !== fingerprint(group))
      await handle.reconfigure(group).catch((err: Error) => this.log.warn({ group: name, err }, 'reconfiguring a node group changed elsewhere failed'));
    const h = this.actors.group(name);
    if (h && record.deleting && !h.deleting) await this.retire(h);
  }

  /** A removed group's records, here. */
  private async forget(name: string): Promise<void> {
    await stored(
      () =>
        this.store.root.transaction(() => {
          clearGroup(this.store, name);
          this.store.groups.remove(name);
          // Cluster mode: how far this copy held the group's log (src/cluster/wal.ts).
          this.store.meta.remove(appliedKey(name));
        }),
      this.store.guard,
    );
  }

  async create(raw: unknown): Promise<Change> {
    const result = normalizeNodeGroup(raw, this.terraform, this.metrics ? { metrics: this.metrics } : {});
    if ('errors' in result) return invalid(result.errors);
    const group = result.group;
    // A create of the same name still under way counts as existing: its write is not visible yet.
    const exists = { ok: false, status: 409, code: 'NODE_GROUP_EXISTS', detail: `node group '${group.name}' exists` } as const;
    if (this.creating.has(group.name) || this.store.groups.get(group.name) || this.actors.group(group.name)) return exists;
    // Cluster mode: created on another instance, perhaps not seen here yet.
    if (this.sharing && (await this.sharing.get(group.name)) !== undefined) return exists;
    this.creating.add(group.name);
    try {
      // Cluster mode: another instance created the same name meanwhile (its create won).
      if (!(await this.persist(group.name, { spec: group, source: 'api', updatedAt: Date.now() }))) return exists;
      try {
        await this.actors.addGroup(group);
      } catch (err) {
        // The group is stored and listed, and its thread is started again as after a crash
        // (actor.crashed, then actor.restarted); lookups meanwhile answer 503 NOT_READY.
        this.log.error({ group: group.name, err }, 'the actor of a new node group did not start; it is being restarted');
      }
    } finally {
      this.creating.delete(group.name);
    }
    this.emit([{ type: 'nodegroup.changed', group: group.name, change: 'created' }]);
    return { ok: true, group };
  }

  async replace(name: string, raw: unknown): Promise<Change> {
    const handle = this.actors.group(name);
    const stored = this.store.groups.get(name);
    if (!handle || !stored || stored.deleting) return { ok: false, status: 404, code: 'NODE_GROUP_NOT_FOUND', detail: `node group '${name}' does not exist` };
    const result = normalizeNodeGroup(keepSecrets(raw, handle.group), this.terraform, this.metrics ? { metrics: this.metrics } : {});
    if ('errors' in result) return invalid(result.errors);
    const group = result.group;
    if (group.name !== name) return invalid([{ path: 'name', pointer: '/name', message: `must be the node group of the path ('${name}')` }]);
    // Refused before anything is stored: a new spec the actor never saw would be half applied.
    if (!handle.ready) return { ok: false, status: 503, code: 'NOT_READY', detail: `node group '${name}' is restarting; nothing was changed, retry shortly`, retryAfter: 1 };
    if (group.platform.type !== handle.group.platform.type && (await handle.call('counts')).nodes.length > 0) {
      return { ok: false, status: 409, code: 'NODE_GROUP_CONFLICT', detail: `the platform of node group '${name}' cannot change while it has nodes; delete the group or drain its nodes first` };
    }
    const held = this.droppedRegionsInUse(name, group);
    if (held.length > 0) return { ok: false, status: 409, code: 'NODE_GROUP_CONFLICT', detail: droppedRegionsDetail(name, held) };
    if (!(await this.persist(name, { ...stored, spec: group, source: 'api', updatedAt: Date.now() }))) return changedElsewhere(name);
    await handle.reconfigure(group);
    this.emit([{ type: 'nodegroup.changed', group: name, change: 'replaced' }]);
    return { ok: true, group };
  }

  /**
   * The regions a new Terraform spec drops while nodes still run there, with their counts: their
   * resources can only be destroyed through the region's module and provider configuration, which
   * the next apply would no longer have ("Provider configuration not present").
   */
  private droppedRegionsInUse(name: string, next: NodeGroup): Array<[string, number]> {
    if (next.platform.type !== 'terraform') return [];
    const kept = new Set(next.regions.map((r) => r.name));
    const held = new Map<string, number>();
    for (const { value } of this.store.nodes.getRange({ start: [name, ''], end: [`${name}\u0000`, ''] })) {
      if (!kept.has(value.region)) held.set(value.region, (held.get(value.region) ?? 0) + 1);
    }
    return [...held];
  }

  /** Starts retiring a group: 202. Its nodes drain; `finish` removes it once they are gone. */
  async remove(name: string): Promise<Change> {
    const handle = this.actors.group(name);
    const stored = this.store.groups.get(name);
    if (!handle || !stored) return { ok: false, status: 404, code: 'NODE_GROUP_NOT_FOUND', detail: `node group '${name}' does not exist` };
    if (!stored.deleting) {
      if (!(await this.persist(name, { ...stored, deleting: true, updatedAt: Date.now() }))) return changedElsewhere(name);
      this.emit([{ type: 'nodegroup.changed', group: name, change: 'deleting' }]);
    }
    await this.retire(handle);
    return { ok: true, group: handle.group };
  }

  async retire(handle: GroupHandle): Promise<void> {
    handle.deleting = true;
    await this.actors.supervisor?.retireGroup(handle.name);
  }

  /** The supervisor reports a retiring group empty: forget it and everything it kept. */
  async finish(name: string): Promise<void> {
    if (!this.store.groups.get(name)?.deleting) return;
    await this.actors.removeGroup(name);
    await this.forget(name);
    await stored(this.store.durable());
    await this.sharing?.remove(name);
    this.emit([{ type: 'nodegroup.changed', group: name, change: 'deleted' }]);
  }
}

function droppedRegionsDetail(name: string, held: ReadonlyArray<[string, number]>): string {
  const list = held.map(([region, n]) => `'${region}' (${n} node${n === 1 ? '' : 's'})`).join(', ');
  return `node group '${name}' still has nodes in ${list}, whose Terraform resources need the region's provider settings to be destroyed: set its rules' max to 0, wait for its nodes to go, then remove the region`;
}

function changedElsewhere(name: string): Change {
  return { ok: false, status: 409, code: 'NODE_GROUP_CONFLICT', detail: `node group '${name}' was changed on another instance meanwhile; nothing was changed: read it again and retry` };
}

function invalid(errors: FieldError[]): Change {
  const prefixed = errors.map((e) => ({ ...e, path: `body.${e.path}` }));
  return { ok: false, status: 400, code: 'VALIDATION_FAILED', detail: prefixed.map((e) => `${e.path} ${e.message}`).join('; '), errors: prefixed };
}
