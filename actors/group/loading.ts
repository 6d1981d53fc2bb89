// Loading a group actor's model from LMDB: at start, and again after a refused or failed commit
// (memory must never claim what the store does not hold). Nodes and provisions are read at once;
// the bindings, of which there may be millions, follow in chunks in the background, letting the
// actor's calls in between, and a call that needs a binding before its chunk comes reads it
// itself (need). Owns the background load and the streams removed while it runs.
import type { NodeGroup } from '../../src/config/types.js';
import type { Write } from '../../src/model/effects.js';
import { GroupModel } from '../../src/model/group-model.js';
import { PLANNER_KEY } from '../../src/policy/scaling/memory.js';
import { groupRange, type Store } from '../../src/store/store.js';

/** The model with the group's nodes and provisions as stored; its bindings come through a BindingLoader. */
export function loadModel(store: Store, group: NodeGroup): GroupModel {
  const model = new GroupModel(group);
  model.restore(groupRange(store.nodes, group.name), [], groupRange(store.provisions, group.name), Date.now(), store.planner.get([group.name, PLANNER_KEY]));
  return model;
}

export class BindingLoader {
  /**
   * While the bindings are still being loaded: the streams removed meanwhile, so that the
   * loader's older view of the store cannot bring them back. Null once loaded, or stopped.
   */
  private removed: Set<string> | null = new Set();
  /** Settles when every stored binding is in memory (or the loader was stopped). */
  readonly done: Promise<void>;

  constructor(
    private readonly store: Store,
    private readonly model: GroupModel,
  ) {
    // The first chunk is read before the constructor returns.
    this.done = this.run();
  }

  /** Still loading: a call must make sure of the bindings it reads first (need). */
  get loading(): boolean {
    return this.removed !== null;
  }

  /** The model was replaced (a reload): loading into it ends. */
  stop(): void {
    this.removed = null;
  }

  /** Loads the stored bindings in chunks, letting calls in between. */
  private async run(): Promise<void> {
    const model = this.model;
    const group = model.name;
    let after = '';
    for (;;) {
      let last: string | undefined;
      const removed = this.removed;
      if (!removed) return;
      const now = Date.now();
      for (const { value } of this.store.bindings.getRange({ start: [group, after], end: [`${group}\u0000`, ''], limit: 20_000 })) {
        last = value.stream;
        if (!removed.has(value.stream)) model.adoptBinding(value, now);
      }
      if (last === undefined) break;
      after = `${last}\u0000`;
      await new Promise((r) => setImmediate(r));
    }
    this.removed = null;
  }

  /** Makes sure the bindings a call is about are in memory (only needed while they are loading). */
  need(names: Iterable<string>): void {
    const removed = this.removed;
    if (!removed) return;
    const now = Date.now();
    for (const name of names) {
      const stream = this.model.streamOf(name);
      if (this.model.hasBinding(stream) || removed.has(stream)) continue;
      const record = this.store.bindings.get([this.model.name, stream]);
      if (record) this.model.adoptBinding(record, now);
    }
  }

  /** Writes handed to the store: the bindings they remove stay removed, whatever the load reads later. */
  written(writes: readonly Write[]): void {
    const removed = this.removed;
    if (removed) for (const w of writes) if (w.kind === 'binding' && w.value === null) removed.add(w.key);
  }
}
