// Health: silence, overstayed states, drains that finished or ran out, faults to clear. Pure.
import type { TimedState } from '../../domain/vocabulary.js';
import { capabilitiesOf } from '../../domain/capabilities.js';
import { HEARTBEATING, type NodeEvent } from '../states.js';
import type { Action, PlanInput } from './actions.js';

/** States timed by `stateTimeouts` here: those before service fault when overstayed, a destroy is retried. */
const OVERSTAYABLE: ReadonlySet<string> = new Set(['REQUESTED', 'CREATING', 'CREATED', 'STARTED', 'DESTRUCTION_REQUESTED', 'DESTROYING']);

const seconds = (ms: number) => `${Math.round(ms / 100) / 10} s`;

/** Health: silence, overstayed states, drains that finished or ran out, faults to clear. */
export function planHealth({ group, nodes, now, busy }: PlanInput): Action[] {
  const t = group.timing;
  const managed = capabilitiesOf(group.platform.type).managed;
  const actions: Action[] = [];
  for (const n of nodes) {
    if (busy.has(n.id)) continue;
    const inState = now - n.stateSince;
    const event = (event: NodeEvent) => actions.push({ type: 'event', nodeId: n.id, event });
    if (HEARTBEATING.has(n.state) && n.lastSeen !== null && now - n.lastSeen > t.nodeTimeout) {
      event({ type: 'fault', reason: `no heartbeat for ${seconds(now - n.lastSeen)} (nodeTimeout ${seconds(t.nodeTimeout)})` });
      continue;
    }
    if (OVERSTAYABLE.has(n.state) && inState > t.stateTimeouts[n.state as TimedState]) {
      // A destroy that overstays is tried again, never faulted: a FAULT node that still
      // heartbeats would be reinstated into service, a doomed one included.
      if (n.state === 'DESTRUCTION_REQUESTED' && managed) actions.push({ type: 'destroy', nodeId: n.id });
      else if (n.state === 'DESTROYING' && managed) event({ type: 'destroy' });
      else event({ type: 'fault', reason: `${n.state} for more than ${seconds(t.stateTimeouts[n.state as TimedState])}` });
      continue;
    }
    // A draining node is empty only once it has said so: after a restart, until its first
    // heartbeat, its connections are unknown, not zero.
    const empty = n.reported && n.connections === 0;
    switch (n.state) {
      case 'SOFT_SUNSET':
        if (empty) event({ type: 'drained' });
        else if (inState > t.drainTimeout) event({ type: 'drainTimeout' });
        break;
      case 'HARD_SUNSET':
        if (empty || inState > t.stateTimeouts.HARD_SUNSET) event({ type: 'drainTimeout' });
        break;
      case 'FAULT':
        if (managed && inState > t.faultTimeout) event({ type: 'destroy' });
        break;
      case 'DOOMED':
        if (managed) event({ type: 'destroy' });
        break;
      case 'DESTRUCTION_REQUESTED':
        if (managed) actions.push({ type: 'destroy', nodeId: n.id });
        else event({ type: 'destroying' });
        break;
      case 'DESTROYING':
        if (!managed) event({ type: 'destroyed' });
        break;
    }
  }
  return actions;
}
