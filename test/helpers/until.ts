// Waiting for a fact no event announces (a reported load, an instance that answers, a port that
// listens): ask again every 50 ms until the check holds. The bound is a deadline for a test that
// would otherwise hang, not a threshold it asserts.
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Asks `check` until it returns something truthy and returns that; a check that throws has not
 * held yet (an instance that is down refuses the connection). After `ms` it fails naming `what`
 * and the last error, if any.
 */
export async function until<T>(check: () => Promise<T> | T, ms = 15_000, what = 'a condition'): Promise<Exclude<T, false | null | undefined | 0 | ''>> {
  const deadline = Date.now() + ms;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as Exclude<T, false | null | undefined | 0 | ''>;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline) {
      const why = lastError === undefined ? '' : ` (last: ${lastError instanceof Error ? lastError.message : String(lastError)})`;
      throw new Error(`timed out after ${ms} ms waiting for ${what}${why}`, { cause: lastError });
    }
    await sleep(50);
  }
}
