// Ownership of a node group in cluster mode (docs/cluster.md), as pure state driven by a clock and
// by what the lease bucket answered. No sockets here: src/cluster/ownership.ts does the I/O and
// asks these functions what to do and whether it may serve.
//
// The lease is a key in a JetStream KV bucket whose max_age is the lease's TTL: a key not rewritten
// within TTL vanishes on the stream leader. An owner renews every TTL/3 with compare-and-set on its
// revision. Its lease is good until TTL after the last renewal it *sent* that was acknowledged: the
// server stamped that message no earlier than it was sent, so it cannot expire sooner.
//
// Two rules keep a group from moving needlessly when a NATS server dies (a stream without a leader
// answers no write for 4 to 9 s while RAFT elects one):
// - an owner whose renewals fail for want of a leader ("unavailable") keeps serving, up to
//   `rideMs` after its last good renewal: nobody else can acquire meanwhile, since acquiring needs
//   the same leader; its writes stay fenced by the log (wal.ts) whatever it believes;
// - a contender counts the owner's silence only while the bucket answers the contender itself.
// An owner that was not even trying (a paused process) has no such excuse: past TTL it stops.

export interface LeaseTiming {
  /** The bucket's max_age: a lease not renewed for this long is gone. */
  ttlMs: number;
  /** How often an owner renews (TTL/3). */
  renewMs: number;
  /** Subtracted from TTL before an owner stops trusting its lease: clock rates differ a little. */
  marginMs: number;
  /**
   * The longest an owner serves on a lease it cannot renew because the bucket has no leader. A RAFT
   * election on nats-server 2.9 takes 4 to 9 s a round, and a round can fail (a split vote, a
   * server restarting in the middle): on a loaded machine the cluster test of a lost NATS server saw
   * the bucket leaderless for 12 s and more, two rounds, which the 12 s this was before did not
   * cover (both owners lost their groups, and the groups moved). Three rounds are covered. The price
   * is in the one case the ride cannot tell from an election: an instance cut off alone from the
   * stream leaders answers reads of its groups from memory for up to this long (docs/cluster.md).
   */
  rideMs: number;
  /** After this long unowned, any live instance may contend, not only the one ranked first. */
  graceMs: number;
  /**
   * Rebalancing (hrw.ts `handover`): a group is handed over only once held this long, only to an
   * instance seen live without a break for `settledMs`, and at most one per `handoverEveryMs`. An
   * instance that comes back (a restart, a pause) then takes its share calmly, not in a storm.
   */
  holdMs: number;
  settledMs: number;
  handoverEveryMs: number;
}

export function leaseTiming(ttlMs: number): LeaseTiming {
  return {
    ttlMs,
    renewMs: Math.max(50, Math.floor(ttlMs / 3)),
    marginMs: Math.max(20, Math.floor(ttlMs / 10)),
    rideMs: Math.max(2 * ttlMs, 30_000),
    graceMs: ttlMs + 2000,
    holdMs: 10 * ttlMs,
    settledMs: 3 * ttlMs,
    handoverEveryMs: Math.max(2000, 2 * ttlMs),
  };
}

/** What a renewal or an acquisition came back with. */
export type Outcome =
  | { kind: 'ok'; revision: number }
  /** No leader, a timeout, no responders, the connection down: nothing is known. */
  | { kind: 'unavailable' }
  /** The revision was not the key's: someone else's write, or the key expired. */
  | { kind: 'conflict' };

export interface Held {
  epoch: number;
  revision: number;
  /** When the last renewal (or the acquisition) that was acknowledged had been sent. */
  confirmedSentAt: number;
  /**
   * While every attempt since the last good one failed as `unavailable`: when the first and the
   * latest of them were sent. The bucket had no leader between the two: an owner retries every few
   * hundred ms, so a gap in between long enough to matter would have let one through.
   */
  riding: { firstSentAt: number; lastSentAt: number } | null;
}

/** An owner's state: held (serving while `serving` says so), or lost. */
export type OwnerState = { kind: 'held'; held: Held } | { kind: 'lost'; reason: string };

export function acquired(epoch: number, sentAt: number): OwnerState {
  return { kind: 'held', held: { epoch, revision: epoch, confirmedSentAt: sentAt, riding: null } };
}

/**
 * After a renewal sent at `sentAt` came back with `outcome` at `now`. A conflict is not yet a loss:
 * the caller reads the key again (`afterConflict`), since after a leader change the retry of a
 * renewal that landed, whose acknowledgement was lost, gets exactly this answer.
 *
 * `cut`: this instance lost its connection to every NATS server while the renewal was out. Its
 * failure then says nothing the cut does not: the owner answers reads as any cut owner does, and
 * the first renewal after the cut decides (`afterCut`). Judged as a plain failure, a renewal that
 * had waited on servers as they died lost the group just after the cut began (the cluster test of
 * all NATS servers gone, a lease of 1 s, on a loaded machine).
 */
export function renewed(state: OwnerState, outcome: Outcome, sentAt: number, now: number, t: LeaseTiming, cut = false): OwnerState {
  if (state.kind !== 'held') return state;
  const h = state.held;
  if (outcome.kind === 'unavailable' && cut) return state;
  if (outcome.kind === 'ok') {
    // Acknowledged: the server stamped it after `sentAt`, whatever happened to us meanwhile.
    return { kind: 'held', held: { ...h, revision: outcome.revision, confirmedSentAt: Math.max(h.confirmedSentAt, sentAt), riding: null } };
  }
  const next: Held = outcome.kind === 'unavailable' ? { ...h, riding: { firstSentAt: h.riding?.firstSentAt ?? sentAt, lastSentAt: sentAt } } : h;
  if (!stillGood(next, now, t)) return { kind: 'lost', reason: 'the lease ran out before a renewal was acknowledged' };
  return { kind: 'held', held: next };
}

/**
 * What the key holds after a renewal conflicted: our own value (our write landed, its answer was
 * lost: go on at that revision), someone else's (lost), or nothing (it expired while the bucket
 * had no leader: acquire again, while still serving on the old lease if it is good).
 */
export type KeyRead = { kind: 'ours'; revision: number } | { kind: 'theirs'; owner: string } | { kind: 'absent' } | { kind: 'unavailable' };

export function afterConflict(state: OwnerState, read: KeyRead, readSentAt: number, now: number, t: LeaseTiming, cut = false): { state: OwnerState; reacquire: boolean } {
  if (state.kind !== 'held') return { state, reacquire: false };
  if (read.kind === 'theirs') return { state: { kind: 'lost', reason: `instance ${read.owner} holds the lease` }, reacquire: false };
  if (read.kind === 'ours') return { state: { kind: 'held', held: ourWriteLanded(state.held, read.revision) }, reacquire: false };
  // A read that found no leader is one more attempt of the ride (an election right after the
  // conflict): without it, an owner whose key aged out during a long election lost the group to the
  // time its reads took (the cluster test of a lost NATS server found it on a loaded machine).
  if (read.kind === 'unavailable') return { state: renewed(state, { kind: 'unavailable' }, readSentAt, now, t, cut), reacquire: false };
  if (!stillGood(state.held, now, t)) return { state: { kind: 'lost', reason: 'the lease expired' }, reacquire: false };
  return { state, reacquire: true };
}

/**
 * The lease was acquired again after it expired unseen (a leader change aged it out): a new epoch.
 * Only while the old one was still good: otherwise it is lost, and acquiring again is a fresh start.
 * A create that found no leader rides on like a renewal that did; one that found the key taken is
 * not yet a loss (the next renewal reads who holds it).
 */
export function reacquired(state: OwnerState, outcome: Outcome, sentAt: number, now: number, t: LeaseTiming, cut = false): OwnerState {
  if (outcome.kind === 'unavailable') return renewed(state, outcome, sentAt, now, t, cut);
  if (state.kind !== 'held' || !stillGood(state.held, now, t)) return { kind: 'lost', reason: 'the lease ran out before it was acquired again' };
  if (outcome.kind === 'conflict') return state;
  return acquired(outcome.revision, sentAt);
}

/**
 * The key holds our value at a newer revision: a renewal whose answer was lost (it found no leader
 * in time, then landed) is in. It was sent no earlier than the first attempt that failed since the
 * last acknowledged one, so the lease is good from there; the ride ends (the bucket had a leader
 * when it landed). Before, the ride ended without the lease moving on: an owner that had ridden
 * through an election was left on its last acknowledged renewal, and lost the group at its next.
 */
function ourWriteLanded(h: Held, revision: number): Held {
  // The revision we hold already: nothing of ours landed since, and the lease stays where it was.
  if (revision <= h.revision) return { ...h, revision };
  return { ...h, revision, confirmedSentAt: Math.max(h.confirmedSentAt, h.riding?.firstSentAt ?? h.confirmedSentAt), riding: null };
}

function stillGood(h: Held, now: number, t: LeaseTiming): boolean {
  return now < goodUntil(h, t);
}

/** Until when an owner may answer from its memory. */
export function goodUntil(h: Held, t: LeaseTiming): number {
  const plain = h.confirmedSentAt + t.ttlMs - t.marginMs;
  if (h.riding === null) return plain;
  // Riding through an election: for as long as the bucket had no leader, it answered nobody, and
  // a contender's count of the owner's silence stood still; so the lease stretches by that long.
  // A single unavailable answer proves nothing about how long it lasted, and stretches nothing.
  return Math.min(h.confirmedSentAt + t.rideMs, plain + Math.max(0, h.riding.lastSentAt - h.riding.firstSentAt));
}

/**
 * Whether an owner may hand a group over now (rebalancing, hrw.ts `handover`): only while the lease
 * bucket answers, none of its leases riding through an election. A hand-over stops serving first and
 * then deletes the lease; started while the bucket has no leader, the delete cannot land, and the
 * group has no owner until its key ages out and a contender's count of silence runs (TTL and more).
 */
export function calmToHandOver(states: Iterable<OwnerState>, bucketAnswers: boolean): boolean {
  if (!bucketAnswers) return false;
  for (const s of states) if (s.kind === 'held' && s.held.riding !== null) return false;
  return true;
}

/**
 * Whether the owner may serve at `now`: checked on every call, before anything is read. While this
 * instance's connection to every NATS server is down (`cut`), an owner keeps answering what needs
 * no write (its log refuses every write): nobody can take a write from it, and reads of what was
 * bound before stay right unless another instance took the group over and moved a stream meanwhile,
 * which is the price of answering at all without NATS (docs/cluster.md).
 */
export function serving(state: OwnerState, now: number, t: LeaseTiming, cut = false): boolean {
  return state.kind === 'held' && (cut || stillGood(state.held, now, t));
}

/**
 * Back from a cut, with a lease that may have run out meanwhile: what the key holds decides. Ours:
 * go on. Someone else's: lost. Absent: acquire it again, and restart the actor at the new epoch so
 * that it catches up with the log first (another owner may have come and gone meanwhile).
 */
export function afterCut(state: OwnerState, read: KeyRead): { state: OwnerState; reacquire: boolean } {
  if (state.kind !== 'held') return { state, reacquire: false };
  if (read.kind === 'theirs') return { state: { kind: 'lost', reason: `instance ${read.owner} holds the lease` }, reacquire: false };
  if (read.kind === 'ours') return { state: { kind: 'held', held: ourWriteLanded(state.held, read.revision) }, reacquire: false };
  return { state, reacquire: read.kind === 'absent' };
}

/**
 * When a renewal that was due is only now being sent (`now`): if the owner has not been trying
 * (paused, its loop starved) past its lease, it must not claim it any more.
 */
export function beforeRenewal(state: OwnerState, now: number, t: LeaseTiming): OwnerState {
  if (state.kind === 'held' && !stillGood(state.held, now, t)) return { kind: 'lost', reason: 'the lease ran out: this instance did not renew it in time (paused?)' };
  return state;
}

// ---- contenders ----------------------------------------------------------------------------------

/** What a non-owner knows of a group's lease. */
export interface Watching {
  /** The owner named by the last PUT seen, or null after a DEL or when none was ever seen. */
  owner: string | null;
  /** Time during which the bucket answered this instance and no PUT was seen (ms). */
  silentAvailableMs: number;
  /** When the group was last seen owned (a PUT), or first watched. */
  lastOwnedAt: number;
  /** A DEL was seen: the owner handed it back. */
  released: boolean;
}

export function watching(now: number): Watching {
  return { owner: null, silentAvailableMs: 0, lastOwnedAt: now, released: false };
}

export function sawPut(_w: Watching, owner: string, now: number): Watching {
  return { owner, silentAvailableMs: 0, lastOwnedAt: now, released: false };
}

export function sawDelete(w: Watching): Watching {
  return { ...w, owner: null, released: true };
}

/**
 * A create that found the key still there: a renewal the watch has not delivered yet (it resets
 * the count when it comes), or the old key not aged out yet, since a probe's answer vouches for
 * the time since the one before, which may have begun before the last PUT was seen. Neither
 * restarts the count of silence, nor forgets whose lease it was: the next attempt waits one
 * probing period. (Counting afresh, with the owner unknown, cost a takeover a whole TTL, or the
 * grace period, whenever the first create came a little early.)
 */
export function conflicted(w: Watching, t: LeaseTiming, everyMs: number): Watching {
  return { ...w, silentAvailableMs: Math.min(w.silentAvailableMs, t.ttlMs - everyMs) };
}

/**
 * What a first look at a group's lease found (an instance just started, a group just created):
 * someone's PUT, a DEL marker (handed back), or no key at all.
 */
export type FirstSight = { kind: 'held'; owner: string } | { kind: 'released' } | { kind: 'absent' };

/**
 * Where a contender starts from. Only a DEL marker frees a group at once. No key is not proof that
 * nobody serves: a key ages out on a new stream leader right after an election, while its owner,
 * riding through that election, may still hold it by `goodUntil`, up to TTL after the bucket
 * answers again. A contender that starts counting silence only from its first sight cannot take
 * the group before that. The price: a group never owned (a new cluster, a new group) waits TTL of
 * answered probes for its first owner.
 */
export function firstSight(seen: FirstSight, now: number): Watching {
  if (seen.kind === 'held') return sawPut(watching(now), seen.owner, now);
  if (seen.kind === 'released') return sawDelete(watching(now));
  return watching(now);
}

/**
 * A probe of the bucket answered (`available`) or not, `elapsedMs` after the previous one. An
 * answer vouches for the time since the last probe only up to `everyMs` (the probing period): after
 * a pause or a starved loop, the time in between may have been leaderless, when the owner's
 * silence does not count.
 *
 * A probe that finds no leader starts the count again from zero: the owner could not renew
 * either, the new leader ages its key out, and the owner needs a renewal, a read and a create to
 * take it back. Silence counted before the election must not be added to silence after it: a
 * contender whose watch had stood still (it saw no renewal) would otherwise create the key the
 * moment a leader is back, before the owner (the cluster test of a lost NATS server saw a group
 * move so). With the count restarted, a contender waits a whole TTL of answers after an election,
 * by which time the owner's key is back (its create then conflicts). A DEL seen before the
 * election (a group handed back) is forgotten too: after it, only silence frees the group (the
 * same stalled watch would have missed the PUT of whoever took it meanwhile).
 */
export function probed(w: Watching, available: boolean, elapsedMs: number, everyMs: number): Watching {
  return available ? { ...w, silentAvailableMs: w.silentAvailableMs + Math.min(elapsedMs, everyMs) } : { ...w, silentAvailableMs: 0, released: false };
}

/**
 * Whether this instance should try to acquire now. `rank` is its place for the group among the
 * live instances (0: first, by rendezvous hashing, hrw.ts). The first-ranked tries as soon as the
 * lease is free; others only once the group has gone unowned for `graceMs`, so that a group whose
 * preferred instance is sick still gets an owner.
 */
export function shouldContend(w: Watching, rank: number, now: number, t: LeaseTiming): boolean {
  const free = w.released || w.silentAvailableMs >= t.ttlMs;
  if (!free) return false;
  return rank === 0 || now - w.lastOwnedAt >= t.graceMs;
}
