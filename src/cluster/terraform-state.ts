// Cluster mode: each Terraform node group's state and lock in the `sy_tfstate` KV bucket
// (docs/cluster.md, "Terraform state"), read and written for Terraform's `http` backend by
// src/http/routes/terraform-state.ts. The rules are pure (src/policy/cluster/terraform-lock.ts);
// this is the I/O: a key per group for the state (gzipped: a fleet's state must fit a NATS
// message), a key per group for the lock (created only if absent), every write by compare-and-set.
import { gunzipSync, gzipSync } from 'node:zlib';
import type { KV } from '@nats-io/kv';
import type { Logger } from 'pino';
import type { EventBody } from '../domain/events.js';
import { decideLock, decideUnlock, decideWrite, type Asker, type LockRecord } from '../policy/cluster/terraform-lock.js';
import { isConflict } from './nats.js';

/** Keys in base64url: a group name may hold dots, which would make empty subject tokens. */
const b64 = (group: string) => Buffer.from(group).toString('base64url');
export const stateKey = (group: string) => `state.${b64(group)}`;
export const lockKey = (group: string) => `lock.${b64(group)}`;

/** Terraform's LockInfo, as it sends it (ID is the only field relied on). */
export interface LockInfo {
  ID: string;
  [field: string]: unknown;
}

/** The lock key's value: the rules' record plus Terraform's own info, to answer a 423 with. */
interface StoredLock extends LockRecord {
  at: string;
  info: LockInfo;
}

/** What the route answers: a status and, for a 423/409, the lock info Terraform reads. */
export interface StateAnswer {
  status: number;
  message?: string;
  lock?: LockInfo;
}

export interface TerraformStateOptions {
  kv: KV;
  instance: string;
  /** The epoch this instance serves the group at now; null when it does not serve it. */
  servingEpoch(group: string): number | null;
  /** The largest gzipped state a NATS message carries here (the server's max_payload, less room for headers). */
  maxBytes(): number;
  emit(events: EventBody[]): void;
  log: Logger;
}

const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
/** Attempts of a lock or unlock whose compare-and-set lost to another write meanwhile. */
const ATTEMPTS = 3;

export class TerraformState {
  /**
   * Per group, the lock this instance holds and the state revision it last saw under it: its
   * writes are compare-and-set on that revision, so a write of a lock holder whose lock was
   * broken meanwhile (the new owner rewrote the state) fails.
   */
  private readonly held = new Map<string, { id: string; revision: number }>();

  constructor(private readonly o: TerraformStateOptions) {}

  private asker(group: string): Asker {
    const epoch = this.o.servingEpoch(group);
    return epoch === null ? null : { instance: this.o.instance, epoch };
  }

  /** The state Terraform stored last, or null (never written, or written empty by a lock break). */
  async read(group: string): Promise<Uint8Array | null> {
    const e = await this.o.kv.get(stateKey(group));
    if (e?.operation !== 'PUT' || e.value.length === 0) return null;
    return gunzipSync(e.value);
  }

  private async lockOf(group: string): Promise<{ lock: StoredLock | null; revision: number }> {
    const e = await this.o.kv.get(lockKey(group));
    return e && e.operation === 'PUT' ? { lock: e.json<StoredLock>(), revision: e.revision } : { lock: null, revision: e?.revision ?? 0 };
  }

  /** The state key's revision now (0: none), after rewriting it as it is when `bump`: see the file's header. */
  private async stateRevision(group: string, bump: boolean): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      const e = await this.o.kv.get(stateKey(group));
      const exists = !!e && e.operation === 'PUT';
      if (!bump) return exists ? e!.revision : 0;
      try {
        return exists ? await this.o.kv.update(stateKey(group), e!.value, e!.revision) : await this.o.kv.create(stateKey(group), new Uint8Array());
      } catch (err) {
        if (!isConflict(err) || attempt >= ATTEMPTS) throw err;
      }
    }
  }

  async lock(group: string, info: LockInfo): Promise<StateAnswer> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const { lock, revision } = await this.lockOf(group);
      const asker = this.asker(group);
      const d = decideLock(lock, asker, info.ID);
      if (d.kind === 'again') return { status: 200 };
      if (d.kind === 'held') return { status: 423, message: 'held by a Terraform of this instance', lock: lockInfoOf(lock!) };
      if (d.kind === 'refused') return this.refuse(group, 'lock', d.reason, lock);
      const value: StoredLock = { id: info.ID, instance: asker!.instance, epoch: asker!.epoch, at: new Date().toISOString(), info };
      try {
        // Free is a key never written, or one released (kept with its epoch: terraform-lock.ts).
        if (d.kind === 'take' && !lock) await this.o.kv.create(lockKey(group), enc(value));
        else await this.o.kv.update(lockKey(group), enc(value), revision);
      } catch (err) {
        if (isConflict(err)) continue;
        throw err;
      }
      this.held.set(group, { id: info.ID, revision: await this.stateRevision(group, d.kind === 'break') });
      if (d.kind === 'break') {
        const message = `broke the Terraform state lock of ${d.previous.instance} (epoch ${d.previous.epoch}, id ${d.previous.id}): this instance owns the group now (epoch ${asker!.epoch})`;
        this.o.log.warn({ group, previous: d.previous, epoch: asker!.epoch }, message);
        this.o.emit([{ type: 'platform.progress', group, platform: 'terraform', operation: 'state', phase: 'lock-broken', message }]);
      }
      return { status: 200 };
    }
    return { status: 409, message: 'the lock kept changing while it was taken' };
  }

  async write(group: string, id: string | undefined, data: Uint8Array): Promise<StateAnswer> {
    const { lock } = await this.lockOf(group);
    const d = decideWrite(lock, this.asker(group), id);
    if (!d.ok) return this.refuse(group, 'write', d.reason, lock);
    const held = this.held.get(group);
    if (!held || held.id !== id) return this.refuse(group, 'write', 'this instance did not take that lock', lock);
    const gz = gzipSync(data);
    if (gz.length > this.o.maxBytes()) {
      const message = `the Terraform state is ${gz.length} bytes gzipped (${data.length} raw), more than a NATS message carries here (${this.o.maxBytes()}): raise max_payload on the NATS servers, or split the group`;
      this.o.log.error({ group }, message);
      this.o.emit([{ type: 'platform.error', group, operation: 'state', message }]);
      return { status: 413, message };
    }
    try {
      held.revision = held.revision === 0 ? await this.o.kv.create(stateKey(group), gz) : await this.o.kv.update(stateKey(group), gz, held.revision);
      return { status: 200 };
    } catch (err) {
      if (!isConflict(err)) throw err;
      return this.refuse(group, 'write', 'the state changed since this lock was taken: another owner broke the lock', lock);
    }
  }

  async unlock(group: string, info: Partial<LockInfo>): Promise<StateAnswer> {
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const { lock, revision } = await this.lockOf(group);
      const d = decideUnlock(lock, this.o.instance, info.ID);
      if (d.kind === 'gone') return { status: 200 };
      if (d.kind === 'refused') return this.refuse(group, 'unlock', `the lock is ${d.current.instance}'s (epoch ${d.current.epoch}, id ${d.current.id})`, lock);
      try {
        const released: StoredLock = { ...lock!, released: true, at: new Date().toISOString() };
        await this.o.kv.update(lockKey(group), enc(released), revision);
      } catch (err) {
        if (isConflict(err)) continue;
        throw err;
      }
      if (this.held.get(group)?.id === info.ID) this.held.delete(group);
      return { status: 200 };
    }
    return { status: 409, message: 'the lock kept changing while it was released' };
  }

  /** A deleted group's state and lock go with it (a group made again under its name starts empty). */
  async purge(group: string): Promise<void> {
    this.held.delete(group);
    await this.o.kv.purge(stateKey(group));
    await this.o.kv.purge(lockKey(group));
  }

  private refuse(group: string, what: 'lock' | 'write' | 'unlock', reason: string, lock: StoredLock | null): StateAnswer {
    const message = `Terraform state ${what} refused: ${reason}`;
    this.o.log.warn({ group, instance: this.o.instance }, message);
    if (what !== 'unlock') this.o.emit([{ type: 'platform.error', group, operation: 'state', message }]);
    // A released lock keeps its key (terraform-lock.ts) but holds nothing: 423 names a lock held.
    const held = lock && !lock.released ? lock : null;
    return { status: what === 'lock' && held ? 423 : 409, message, ...(held ? { lock: lockInfoOf(held) } : {}) };
  }
}

/** The lock info Terraform shows when it cannot lock: its own, saying which instance holds it. */
function lockInfoOf(l: StoredLock): LockInfo {
  return { ...l.info, ID: l.id, Info: `held by switchyard instance ${l.instance} (epoch ${l.epoch}) since ${l.at}` };
}
