// When an instance's follower of the cluster's event log (src/cluster/events.ts) has stopped, as a
// pure rule over what it read and what the stream holds. After a NATS server is killed, the
// client's ordered consumer can stop for good, silently: messages pending on the server, no pull
// outstanding, nothing in the log (issue 22 saw it after 4 of 4 kills on a loaded machine). A
// watchdog compares the follower's last sequence with the stream's: behind, and no step forward
// for `stallMs`, it is stopped; the follower is then made again from its last sequence. Behind but
// moving (catching up after a restart, a burst) is not a stall, and neither is a stream that does
// not answer (an election: the follower cannot move either, and its check waits with it).

export interface FollowerWatch {
  /** The follower's sequence at the last check where it had moved (or the first check). */
  seq: number;
  /** When it was last seen moving, or last seen level with the stream. */
  movedAt: number;
}

export function followerWatch(seq: number, now: number): FollowerWatch {
  return { seq, movedAt: now };
}

/**
 * A check: the follower has read up to `followerSeq`; the stream's last sequence is `streamLast`
 * (null: the stream did not answer). `restart` when it is behind and has not moved for `stallMs`.
 */
export function checkFollower(w: FollowerWatch, followerSeq: number, streamLast: number | null, now: number, stallMs: number): { watch: FollowerWatch; restart: boolean } {
  if (followerSeq !== w.seq || streamLast === null || followerSeq >= streamLast) return { watch: { seq: followerSeq, movedAt: now }, restart: false };
  if (now - w.movedAt < stallMs) return { watch: w, restart: false };
  // Restarted: the next stall is counted from now.
  return { watch: { seq: followerSeq, movedAt: now }, restart: true };
}
