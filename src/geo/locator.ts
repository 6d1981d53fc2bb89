// Where a client is, for nearest-region routing (docs/choosing-nodes.md). The GeoIP database plugs in here.
import type { Location } from '../domain/regions.js';

export type { Location };

export interface Locator {
  /** The location of an IP address, or null when unknown, private or reserved. */
  locate(ip: string): Location | null;
}

export const noLocator: Locator = { locate: () => null };
