// Terraform state in cluster mode (docs/cluster.md, "Terraform state"), as pure decisions: who may
// lock a group's state, write it, unlock it. No sockets here: src/cluster/terraform-state.ts reads
// the lock key and the state key, asks these functions, and writes by compare-and-set.
//
// The lock is a key per group holding Terraform's lock info plus the instance that took it and the
// lease epoch it held then. Only the instance serving the group (its lease, ownership.ts) locks or
// writes. A lock of another instance, or of this one at an earlier epoch, belongs to an owner that
// cannot be serving any more (the lease says so): the serving instance breaks it. A lock of a later
// epoch means this instance is the stale one, whatever it believes: it is refused. A lock of this
// instance at its current epoch under another id is a Terraform of its own still running: held
// (the runner runs one command at a time, so this is never broken: two applies never overlap).
//
// A write needs more than the lock check at the time of the request (the stale owner may pause
// between the check and the write): the store writes by compare-and-set on the revision its lock
// holder last saw, and a lock broken is followed by a rewrite of the state (`bump`), so that the
// old holder's chain of revisions is broken and its late write fails.

/** What the lock key holds. */
export interface LockRecord {
  /** Terraform's lock id (its LockInfo.ID). */
  id: string;
  instance: string;
  epoch: number;
  /**
   * Let go of: the key stays, with the epoch of the owner that released it, so that a stale owner
   * (paused past its lease, still believing it serves) cannot take a lock its successor released
   * and run a Terraform beside it. A deleted key would have looked free to anyone.
   */
  released?: true;
}

/** Who asks: this instance and the epoch it serves the group at; null when it does not serve it. */
export type Asker = { instance: string; epoch: number } | null;

export type LockDecision =
  /** Free: create the key. */
  | { kind: 'take' }
  /** The same lock asked for again (a retried request whose answer was lost): granted as it is. */
  | { kind: 'again' }
  /** A stale owner's lock: replace it (compare-and-set on the revision read), and say so. */
  | { kind: 'break'; previous: LockRecord }
  /** Held by a Terraform of this owner: 423 with its info. */
  | { kind: 'held'; current: LockRecord }
  /** This instance may not lock: not serving, or a later owner holds the lock. */
  | { kind: 'refused'; reason: string; current?: LockRecord };

export function decideLock(current: LockRecord | null, asker: Asker, id: string): LockDecision {
  if (!asker) return { kind: 'refused', reason: 'this instance does not serve the node group', ...(current ? { current } : {}) };
  if (!current) return { kind: 'take' };
  if (current.released) {
    return current.epoch > asker.epoch ? { kind: 'refused', reason: `a later owner (${current.instance}, epoch ${current.epoch}) released the lock`, current } : { kind: 'take' };
  }
  if (current.instance === asker.instance && current.epoch === asker.epoch) return current.id === id ? { kind: 'again' } : { kind: 'held', current };
  if (current.epoch > asker.epoch) return { kind: 'refused', reason: `a later owner (${current.instance}, epoch ${current.epoch}) holds the lock`, current };
  return { kind: 'break', previous: current };
}

export type WriteDecision = { ok: true } | { ok: false; reason: string };

/** A state write (POST ?ID=): only the serving instance, holding the lock under that id at its epoch. */
export function decideWrite(current: LockRecord | null, asker: Asker, id: string | undefined): WriteDecision {
  if (!asker) return { ok: false, reason: 'this instance does not serve the node group' };
  if (!id) return { ok: false, reason: 'a state write must name the lock it holds (?ID=)' };
  if (!current || current.released) return { ok: false, reason: 'the state is not locked' };
  if (current.id !== id || current.instance !== asker.instance || current.epoch !== asker.epoch) {
    return { ok: false, reason: `the lock is ${current.instance}'s (epoch ${current.epoch}, id ${current.id}), not this request's` };
  }
  return { ok: true };
}

export type UnlockDecision = { kind: 'release' } | { kind: 'gone' } | { kind: 'refused'; current: LockRecord };

/**
 * An unlock: of this instance's own lock under that id (whatever it serves now: letting go of one's
 * own lock never harms); already free is fine; anyone else's lock stays.
 */
export function decideUnlock(current: LockRecord | null, instance: string, id: string | undefined): UnlockDecision {
  if (!current || current.released) return { kind: 'gone' };
  if (current.instance === instance && current.id === id) return { kind: 'release' };
  return { kind: 'refused', current };
}
