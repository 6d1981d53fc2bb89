// What the dashboard knows, and how it stays current: REST snapshots (refreshed every few seconds
// while the tab is visible, since load figures come with heartbeats, not events) patched at once
// by the event stream, so that a node's new state shows the moment the service announces it.
import { useEffect, useState } from 'preact/hooks';
import { type ApiError, getGroup, listGroups, listProvisions, listStreams, type EventRecord, type GroupDetail, type GroupSummary, type Provision, type Stream } from './api.js';
import { follow, type LiveStatus } from './live.js';

export interface Toast {
  id: number;
  kind: 'ok' | 'error';
  text: string;
}

export interface State {
  groups: GroupSummary[] | null;
  groupsError: string | null;
  /** The group on screen, and what is known of it. */
  group: string | null;
  detail: GroupDetail | null;
  detailMore: boolean;
  detailError: ApiError | null;
  streams: Stream[] | null;
  streamsMore: boolean;
  provisions: Provision[] | null;
  provisionsMore: boolean;
  /** The latest events, oldest first. */
  events: EventRecord[];
  live: LiveStatus;
  refreshedAt: number | null;
  toasts: Toast[];
  /** Nodes whose state changed lately (id → when), to show which row moved. */
  changed: Record<string, number>;
}

const KEEP_EVENTS = 1000;
const POLL_MS = 5_000;
const SETTLE_MS = 300;

const initial = (): State => ({
  groups: null,
  groupsError: null,
  group: null,
  detail: null,
  detailMore: false,
  detailError: null,
  streams: null,
  streamsMore: false,
  provisions: null,
  provisionsMore: false,
  events: [],
  live: { state: 'connecting' },
  refreshedAt: null,
  toasts: [],
  changed: {},
});

let state: State = initial();
const listeners = new Set<() => void>();
export const getState = () => state;

function set(patch: Partial<State>): void {
  state = { ...state, ...patch };
  for (const l of listeners) l();
}

export function useStore(): State {
  const [, rerender] = useState(0);
  useEffect(() => {
    const l = () => rerender((n) => n + 1);
    listeners.add(l);
    return () => void listeners.delete(l);
  }, []);
  return state;
}

let toastId = 0;
export function toast(kind: Toast['kind'], text: string): void {
  const id = ++toastId;
  set({ toasts: [...state.toasts, { id, kind, text }].slice(-4) });
  setTimeout(() => dismiss(id), kind === 'error' ? 10_000 : 5_000);
}
export const dismiss = (id: number) => set({ toasts: state.toasts.filter((t) => t.id !== id) });

/** Node states as the event stream last told them, to win over an older snapshot. */
const told = new Map<string, { group: string; state: string | null; at: number; parent?: string | null; parentAt?: number }>();

function merge(detail: GroupDetail): GroupDetail {
  const nodeList = detail.nodeList.map((n) => {
    const t = told.get(`${detail.name}/${n.id}`);
    if (!t) return n;
    let out = n;
    if (t.state !== null && t.at > Date.parse(n.stateSince) && t.state !== n.state) out = { ...out, state: t.state as typeof n.state, stateSince: new Date(t.at).toISOString() };
    if (t.parentAt !== undefined && t.parent !== undefined && t.parentAt > Date.parse(n.stateSince) && t.parent !== n.parent) out = { ...out, parent: t.parent };
    return out;
  });
  return { ...detail, nodeList };
}

let loading: Promise<void> | null = null;
let again = false;

/** Fetches the groups and the shown group's nodes, streams and provisions; one load at a time. */
export function refresh(): Promise<void> {
  if (loading) {
    again = true;
    return loading;
  }
  loading = (async () => {
    const group = state.group;
    const [groups, detail, streams, provisions] = await Promise.allSettled([
      listGroups(),
      group ? getGroup(group) : Promise.resolve(null),
      group ? listStreams(group) : Promise.resolve(null),
      group ? listProvisions(group) : Promise.resolve(null),
    ]);
    if (group !== state.group) return;
    const patch: Partial<State> = { refreshedAt: Date.now() };
    if (groups.status === 'fulfilled') Object.assign(patch, { groups: groups.value, groupsError: null });
    else patch.groupsError = (groups.reason as Error).message;
    if (detail.status === 'fulfilled' && detail.value) Object.assign(patch, { detail: merge(detail.value.value), detailMore: detail.value.more, detailError: null });
    else if (detail.status === 'rejected') Object.assign(patch, { detailError: detail.reason as ApiError, ...((detail.reason as ApiError).status === 404 ? { detail: null } : {}) });
    if (streams.status === 'fulfilled' && streams.value) Object.assign(patch, { streams: streams.value.value, streamsMore: streams.value.more });
    if (provisions.status === 'fulfilled' && provisions.value) Object.assign(patch, { provisions: provisions.value.value, provisionsMore: provisions.value.more });
    set(patch);
  })().finally(() => {
    loading = null;
    if (again) {
      again = false;
      void refresh();
    }
  });
  return loading;
}

let settleTimer: ReturnType<typeof setTimeout> | undefined;
/** A refresh shortly after a burst of events, once (heartbeats bring the loads that events do not). */
function settle(): void {
  clearTimeout(settleTimer);
  settleTimer = setTimeout(() => void refresh(), SETTLE_MS);
}

export function selectGroup(name: string | null): void {
  if (name === state.group) return;
  set({ group: name, detail: null, detailError: null, detailMore: false, streams: null, provisions: null, changed: {} });
  void refresh();
}

function onEvents(events: EventRecord[]): void {
  const changed = { ...state.changed };
  let detail = state.detail;
  let dirty = false;
  for (const e of events) {
    if (e.type === 'node.state' || e.type === 'node.parent') {
      const key = `${e.group}/${e.nodeId}`;
      const prev = told.get(key) ?? { group: e.group, state: null, at: 0 };
      told.set(key, e.type === 'node.state' ? { ...prev, state: e.to, at: e.at } : { ...prev, parent: e.parent, parentAt: e.at });
      if (detail && e.group === detail.name) {
        const i = detail.nodeList.findIndex((n) => n.id === e.nodeId);
        if (i >= 0) {
          const n = detail.nodeList[i]!;
          const next = e.type === 'node.state' ? (e.to === null ? null : { ...n, state: e.to, stateSince: new Date(e.at).toISOString() }) : { ...n, parent: e.parent };
          const nodeList = next ? detail.nodeList.with(i, next) : detail.nodeList.toSpliced(i, 1);
          detail = { ...detail, nodeList };
          changed[e.nodeId] = Date.now();
        }
      }
    }
    if (e.group === state.group || e.type === 'nodegroup.changed') dirty = true;
  }
  set({ events: [...state.events, ...events].slice(-KEEP_EVENTS), detail, changed });
  if (dirty) settle();
}

let stopFollowing: (() => void) | null = null;
let poll: ReturnType<typeof setInterval> | undefined;

/** Starts the event stream and the refresh loop, for a logged-in admin. */
export function start(token: string): void {
  stop();
  stopFollowing = follow({ token, onEvents, onStatus: (live) => set({ live }) });
  poll = setInterval(() => {
    if (document.visibilityState === 'visible') void refresh();
  }, POLL_MS);
  void refresh();
}

export function stop(): void {
  stopFollowing?.();
  stopFollowing = null;
  clearInterval(poll);
  clearTimeout(settleTimer);
  told.clear();
  state = initial();
}
