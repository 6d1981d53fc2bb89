// Holds LMDB's write lock on a service's data directory from the test process, as a stalled disk
// or another writer would: every commit the service hands to LMDB meanwhile waits, and a kill -9
// then loses it. The service's own memory runs ahead, which is what tests of "no answer before
// its write is durable" need, without a hook in the code under test.
//
// Caveat: lmdb-js writes a record shape it has not seen before synchronously (its shared
// structures), which would block the writing thread itself; tests write one record of each
// shape they need before holding.
import { join } from 'node:path';
import { ABORT, open } from 'lmdb';

export interface Hold {
  /** Lets the held commits go (nothing of the hold itself is written), and closes this handle. */
  release(): Promise<void>;
}

export function holdWrites(dataDir: string): Hold {
  const root = open({ path: join(dataDir, 'switchyard.mdb'), maxDbs: 16 });
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  // A synchronous write transaction whose callback returns a promise stays open until it settles.
  const ended = Promise.resolve(root.transactionSync(() => held.then(() => ABORT)));
  return {
    async release() {
      release();
      await ended;
      await root.close();
    },
  };
}
