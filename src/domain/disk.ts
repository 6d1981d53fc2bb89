// The store's one constant that the settings check too: the config refuses a reserve below it,
// the store (src/store/store.ts) will not open with one. Here, not in the config's schema, so that
// the actors' threads, which open the store, do not load the settings' schemas (TypeBox) with it.

/**
 * The least reserve `minFreeBytes` may ask for. The guard looks before a write is handed to LMDB,
 * and the writes handed over meanwhile (every thread's, each a batch of a few hundred records at
 * most: a few MiB of new pages) still have to fit: with no reserve, a fault-injection run saw
 * lmdb-js abort the process in about one run in seven once the disk filled.
 */
export const MIN_FREE_FLOOR = 16 * 2 ** 20;
