// How numbers, times and events read on screen.
import type { EventRecord } from './api.js';

export function ago(iso: string | number | null, now: number): string {
  if (iso === null) return 'never';
  const ms = now - (typeof iso === 'number' ? iso : Date.parse(iso));
  return `${duration(Math.max(0, ms))} ago`;
}

export function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

export const clock = (ms: number) => new Date(ms).toLocaleTimeString(undefined, { hour12: false });

export function num(n: number): string {
  return Number.isInteger(n) ? n.toLocaleString() : n.toLocaleString(undefined, { maximumFractionDigits: 1 });
}

export function bitrate(bps: number): string {
  return bps >= 1e6 ? `${(bps / 1e6).toFixed(bps % 1e6 === 0 ? 0 : 1)} Mb/s` : `${Math.round(bps / 1000)} kb/s`;
}

/** States by what they mean to an operator: the badge colour. */
export function stateTone(state: string | null): 'ok' | 'warn' | 'bad' | 'idle' {
  switch (state) {
    case 'INSERVICE':
    case 'LIVE':
      return 'ok';
    case 'FAULT':
    case 'DOOMED':
      return 'bad';
    case 'SOFT_SUNSET':
    case 'HARD_SUNSET':
    case 'DESTRUCTION_REQUESTED':
    case 'DESTROYING':
    case 'PENDING':
      return 'warn';
    default:
      return 'idle';
  }
}

/** One line that says what happened. */
export function describe(e: EventRecord): string {
  switch (e.type) {
    case 'node.state':
      return `${e.nodeId} ${e.from ?? 'new'} → ${e.to ?? 'removed'}${e.reason ? ` (${e.reason})` : ''}`;
    case 'node.parent':
      return `${e.nodeId} parent → ${e.parent ?? 'none'} (${e.reason})`;
    case 'stream.bound':
      return `${e.stream} bound to ${e.origin}${e.transcoder ? ` through ${e.transcoder}` : ''}`;
    case 'stream.live':
      return `${e.stream} LIVE on ${e.origin}`;
    case 'stream.moved':
      return `${e.stream} moved ${e.from} → ${e.to} (${e.reason})`;
    case 'stream.unbound':
      return `${e.stream} unbound from ${e.origin} (${e.reason})`;
    case 'provision.changed':
      return `provision ${e.stream} ${e.change}`;
    case 'scaling.request':
      return `capacity asked for: ${e.role} in ${e.region} (${e.reason})`;
    case 'scaling.action':
      return `${e.action} ${e.count > 1 ? `${e.count} × ` : ''}${e.role} in ${e.region}${e.nodeId ? ` (${e.nodeId})` : ''}: ${e.trigger}, ${e.reason}`;
    case 'scaling.blocked':
      return `scaling blocked for ${e.role} in ${e.region}: ${e.reason}`;
    case 'platform.error':
      return `${e.operation}${e.nodeId ? ` of ${e.nodeId}` : ''} failed: ${e.message}`;
    case 'platform.progress':
      return `${e.operation} ${e.phase}${e.nodeId ? ` ${e.nodeId}` : ''}${e.message ? `: ${e.message}` : ''}`;
    case 'actor.crashed':
      return `group actor crashed: ${e.reason}`;
    case 'actor.restarted':
      return `group actor restarted after ${duration(e.downMs)}`;
    case 'store.unavailable':
      return `writes refused: ${e.message}`;
    case 'store.recovered':
      return 'writes accepted again';
    case 'nodegroup.changed':
      return `node group ${e.group} ${e.change}`;
    case 'cluster.owner':
      return `owned by instance ${e.owner} (epoch ${e.epoch})`;
    case 'cluster.released':
      return `released by instance ${e.owner}: ${e.reason}`;
  }
}

/** Events by kind, for the timeline's filter. */
export const KINDS = ['node', 'stream', 'scaling', 'provision', 'platform', 'nodegroup', 'actor', 'store', 'cluster'] as const;
export type Kind = (typeof KINDS)[number];
export const kindOf = (e: EventRecord) => e.type.slice(0, e.type.indexOf('.')) as Kind;

export function eventTone(e: EventRecord): 'ok' | 'warn' | 'bad' | 'idle' {
  if (e.type === 'node.state') return stateTone(e.to);
  if (e.type === 'platform.error' || e.type === 'actor.crashed' || e.type === 'store.unavailable' || e.type === 'scaling.blocked') return 'bad';
  if (e.type === 'scaling.action' || e.type === 'stream.moved') return 'warn';
  if (e.type === 'stream.live' || e.type === 'store.recovered' || e.type === 'actor.restarted') return 'ok';
  return 'idle';
}
