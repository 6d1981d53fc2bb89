// The control plane's instances as a node agent knows them (docs/cluster.md): the URL it was
// started with, and those its heartbeat replies list (in cluster mode every reply carries the live
// instances). When the one it talks to fails (unreachable, or 5xx: stopping, or its group moving),
// the agent moves to the next one, so that nodes follow when an instance goes away.
export class ControlPlanes {
  private urls: string[];
  private at = 0;

  constructor(first: string) {
    this.urls = [first];
  }

  get current(): string {
    return this.urls[this.at]!;
  }

  get all(): readonly string[] {
    return this.urls;
  }

  /** A reply listed these (the instance answering first): kept, the current one in place. */
  learn(listed: readonly string[] | undefined): void {
    if (!listed || listed.length === 0) return;
    const current = this.current;
    const next = [...new Set([current, ...listed.filter((u) => /^https?:\/\/[^\s]+$/.test(u)).map((u) => u.replace(/\/+$/, ''))])].slice(0, 64);
    this.urls = next;
    this.at = 0;
  }

  /** The current one failed: the next one (round the list). Answers whether it changed. */
  failed(): boolean {
    if (this.urls.length < 2) return false;
    this.at = (this.at + 1) % this.urls.length;
    return true;
  }
}
