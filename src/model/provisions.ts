// Provisions and their renditions (docs/api.md): the ladder a transcoder makes of a stream. Owns
// the group's provisions by stream, and which provisioned stream each rendition name belongs to,
// so that a viewer's lookup of a rendition finds the stream's binding. A deleted provision's
// renditions keep resolving while its stream is bound (current viewers are not cut off).
import type { Failure } from '../domain/failure.js';
import { pageKeys } from '../domain/paging.js';
import type { Provision, Rendition } from '../domain/records.js';
import { unknownRegion } from '../domain/regions.js';
import type { Bindings } from './bindings.js';
import type { EffectLog } from './effects.js';
import type { Settings } from './settings.js';

export class Provisions {
  private readonly byStream = new Map<string, Provision>();
  /** Rendition name → the provisioned stream it belongs to. */
  private readonly renditions = new Map<string, string>();

  constructor(
    private readonly settings: Settings,
    private readonly bindings: Bindings,
    private readonly effects: EffectLog,
  ) {}

  get(stream: string): Provision | undefined {
    return this.byStream.get(stream);
  }

  get size(): number {
    return this.byStream.size;
  }

  /** The stream a name stands for: itself, or the provisioned stream of a rendition. */
  streamOf(name: string): string {
    return this.renditions.get(name) ?? name;
  }

  list(after: string | undefined, limit: number): Provision[] {
    return pageKeys(this.byStream.keys(), after, limit).map((s) => this.byStream.get(s)!);
  }

  /** A stored provision, and its renditions' names. */
  index(p: Provision): void {
    this.byStream.set(p.streamName, p);
    for (const r of p.streams) this.renditions.set(r.name, p.streamName);
  }

  private unindex(p: Provision): void {
    this.byStream.delete(p.streamName);
    for (const r of p.streams) if (this.renditions.get(r.name) === p.streamName) this.renditions.delete(r.name);
  }

  put(input: { streamName: string; region: string; streams: Rendition[] }, mode: 'create' | 'replace', now: number): { ok: true; provision: Provision } | Failure {
    const { name, regions } = this.settings.group;
    const existing = this.byStream.get(input.streamName);
    if (mode === 'create' && existing) {
      return { ok: false, status: 409, code: 'PROVISION_EXISTS', detail: `a provision for stream '${input.streamName}' exists in node group '${name}'` };
    }
    if (mode === 'replace' && !existing) {
      return { ok: false, status: 404, code: 'PROVISION_NOT_FOUND', detail: `stream '${input.streamName}' has no provision in node group '${name}'` };
    }
    const errors: Array<{ path: string; message: string }> = [];
    const badRegion = unknownRegion(regions, input.region);
    if (badRegion) errors.push({ path: 'body.region', message: badRegion });
    input.streams.forEach((r, i) => {
      const owner = this.renditions.get(r.name);
      if (owner !== undefined && owner !== input.streamName) {
        errors.push({ path: `body.streams[${i}].name`, message: `is already a rendition of stream '${owner}'` });
      } else if (r.name !== input.streamName && this.byStream.has(r.name)) {
        errors.push({ path: `body.streams[${i}].name`, message: `is a provisioned stream's name` });
      }
    });
    if (this.renditions.has(input.streamName) && this.renditions.get(input.streamName) !== input.streamName) {
      errors.push({ path: 'body.streamName', message: `is already a rendition of stream '${this.renditions.get(input.streamName)}'` });
    }
    if (errors.length > 0) {
      return { ok: false, status: 400, code: 'VALIDATION_FAILED', detail: errors.map((e) => `${e.path} ${e.message}`).join('; '), errors };
    }
    const provision: Provision = {
      streamName: input.streamName,
      region: input.region,
      streams: input.streams.map((r) => ({ ...r })),
      createdAt: existing?.createdAt ?? now,
      updatedAt: now,
    };
    if (existing) this.unindex(existing);
    this.index(provision);
    this.effects.write('provision', provision.streamName, provision);
    this.effects.emit({ type: 'provision.changed', group: name, stream: provision.streamName, change: existing ? 'replaced' : 'created' });
    return { ok: true, provision };
  }

  /**
   * Deletes a provision. A live binding keeps its transcoder and origin, and the rendition names
   * keep resolving while it lasts, so that current viewers are not cut off.
   */
  delete(stream: string): { ok: true } | Failure {
    const name = this.settings.name;
    const existing = this.byStream.get(stream);
    if (!existing) return { ok: false, status: 404, code: 'PROVISION_NOT_FOUND', detail: `stream '${stream}' has no provision in node group '${name}'` };
    this.byStream.delete(stream);
    if (!this.bindings.has(stream)) this.unindex(existing);
    this.effects.write('provision', stream, null);
    this.effects.emit({ type: 'provision.changed', group: name, stream, change: 'deleted' });
    return { ok: true };
  }

  /** Renditions of a deleted provision stop resolving once its stream has ended (each tick). */
  forgetEnded(): void {
    for (const [rendition, stream] of [...this.renditions]) {
      if (!this.byStream.has(stream) && !this.bindings.has(stream)) this.renditions.delete(rendition);
    }
  }
}
