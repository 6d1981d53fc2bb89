// The node group's configuration as the model last received it, shared by every module of the
// model: GroupModel.reconfigure replaces it here, once, so that no module can go on with an old
// copy. Owns nothing else.
import type { NodeGroup } from '../config/types.js';

export class Settings {
  constructor(public group: NodeGroup) {}

  get name(): string {
    return this.group.name;
  }

  /** Whether a node's heartbeat may name the addresses clients and peers use (platform.trustNodeAddress). */
  get trustNodes(): boolean {
    return this.group.platform.trustNodeAddress;
  }
}
