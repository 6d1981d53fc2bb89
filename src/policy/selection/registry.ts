// The selection strategies by name: the config's `selection.strategy` takes these names (its
// schema derives from this table), and a group's model builds its selector here. Adding a
// strategy: one file implementing Selector and one entry below.
import { leastLoaded } from './least-loaded.js';
import type { Selector, SelectorOptions } from './selector.js';
import { twoChoices } from './two-choices.js';

export const STRATEGIES = {
  'two-choices': twoChoices,
  'least-loaded': leastLoaded,
} as const satisfies Record<string, (options: SelectorOptions) => Selector>;

export type StrategyName = keyof typeof STRATEGIES;

/** The names, the default first. */
export const STRATEGY_NAMES = Object.keys(STRATEGIES) as StrategyName[];

export function createSelector(name: StrategyName, options: SelectorOptions): Selector {
  return STRATEGIES[name](options);
}
