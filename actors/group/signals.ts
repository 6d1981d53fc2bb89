// What a group actor tells its host outside the event log, named where both sides can import it
// (importing actor.ts would run the worker's entry on the main thread).

/** Posted on the events port when another instance took the group over (cluster mode): the host stops the actor. */
export const FENCED_EVENT = 'cluster.fenced';
