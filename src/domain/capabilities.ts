// What each platform can do, as data, so that policy (the scaling plan, the group model) and the
// supervisor ask what a platform does, not which one it is. Adding a platform: one file
// implementing Platform (src/platforms/platform.ts) and one entry here.
import type { PlatformData } from './records.js';

export interface PlatformCapabilities {
  /** It creates and destroys nodes: rules scale it, faults are replaced, retired nodes destroyed. */
  readonly managed: boolean;
  /** Its nodes come back into service after a fault whatever the group's autoReinstate: they are the operator's own. */
  readonly alwaysReinstates: boolean;
  /** Its nodes run on this machine and stop when the service stops cleanly. */
  readonly stopsWithService: boolean;
}

export type PlatformType = PlatformData['type'];

export const PLATFORM_CAPABILITIES: Readonly<Record<PlatformType, PlatformCapabilities>> = {
  local: { managed: true, alwaysReinstates: false, stopsWithService: true },
  terraform: { managed: true, alwaysReinstates: false, stopsWithService: false },
  static: { managed: false, alwaysReinstates: true, stopsWithService: false },
};

export const capabilitiesOf = (type: PlatformType): PlatformCapabilities => PLATFORM_CAPABILITIES[type];
