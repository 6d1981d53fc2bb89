// The dashboard's shell: logging in (and the password change the service may ask for first),
// then one node group at a time (nodes, streams, provisions, timeline) or all of them, chosen by
// the address's #fragment so that a view can be bookmarked and the back button works.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { authTrouble, session, type GroupDetail } from './api.js';
import { ModalHost } from './dialogs.js';
import { ago, num } from './format.js';
import { groupHref, GroupsView } from './groups.js';
import type { LiveStatus } from './live.js';
import { ChangePassword, Login } from './login.js';
import { NodesView } from './nodes.js';
import { ProvisionsView } from './provisions.js';
import { dismiss, selectGroup, start, stop, useStore, type State } from './store.js';
import { StreamsView } from './streams.js';
import { WebhooksView } from './webhooks.js';
import { RecentEvents, Timeline } from './timeline.js';
import './styles.css';

const TABS = [
  ['nodes', 'Nodes'],
  ['streams', 'Streams'],
  ['provisions', 'Provisions'],
  ['events', 'Timeline'],
] as const;
type Tab = (typeof TABS)[number][0];
type Route = { view: 'groups' } | { view: 'webhooks' } | { view: 'group'; group: string; tab: Tab } | { view: 'home' };

function parseRoute(hash: string): Route {
  if (hash === '#/groups') return { view: 'groups' };
  if (hash === '#/webhooks') return { view: 'webhooks' };
  const m = /^#\/g\/([^/]+)(?:\/(\w+))?$/.exec(hash);
  if (m) {
    let group: string;
    try {
      group = decodeURIComponent(m[1]!);
    } catch {
      return { view: 'home' };
    }
    const tab = TABS.some(([t]) => t === m[2]) ? (m[2] as Tab) : 'nodes';
    return { view: 'group', group, tab };
  }
  return { view: 'home' };
}

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}

function useNow(everyMs: number): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

function LiveBadge({ live, refreshedAt, now }: { live: LiveStatus; refreshedAt: number | null; now: number }) {
  const text = live.state === 'live' ? 'Live' : live.state === 'connecting' ? 'Connecting…' : live.state === 'retrying' ? `Reconnecting in ${Math.ceil(live.inMs / 1000)} s` : 'Events stopped';
  const tone = live.state === 'live' ? 'ok' : live.state === 'stopped' ? 'bad' : 'warn';
  const why = live.state === 'retrying' || live.state === 'stopped' ? `: ${live.why}` : '';
  return (
    <span class={`live tone-${tone}`} role="status" title={`Event stream ${text.toLowerCase()}${why}. Figures refreshed ${refreshedAt ? ago(refreshedAt, now) : 'not yet'}.`}>
      <span class="dot" aria-hidden="true" /> {text}
    </span>
  );
}

function Summary({ detail }: { detail: GroupDetail }) {
  const byState = new Map<string, number>();
  for (const n of detail.nodeList) byState.set(n.state, (byState.get(n.state) ?? 0) + 1);
  const draining = (byState.get('SOFT_SUNSET') ?? 0) + (byState.get('HARD_SUNSET') ?? 0);
  const starting = ['REQUESTED', 'CREATING', 'CREATED', 'STARTED'].reduce((a, s) => a + (byState.get(s) ?? 0), 0);
  const fault = byState.get('FAULT') ?? 0;
  const tiles: Array<{ k: string; v: string; sub?: string; title?: string; tone?: string }> = [
    { k: 'In service', v: num(byState.get('INSERVICE') ?? 0), sub: `of ${num(detail.nodes.total)}` },
    { k: 'Starting', v: num(starting) },
    { k: 'Draining', v: num(draining) },
    { k: 'Fault', v: num(fault), ...(fault > 0 ? { tone: 'bad' } : {}) },
    { k: 'Live streams', v: num(detail.streams.live), sub: `+ ${num(detail.streams.pending)} pending` },
    { k: 'Provisions', v: num(detail.provisions) },
    ...detail.load.map((l) => ({ k: `${l.role} load`, v: num(l.connections), sub: `of ${num(l.capacity)}`, title: `${l.role}s in service: connections against the sum of their limits` })),
  ];
  return (
    <dl class="tiles">
      {tiles.map((x) => (
        <div class={x.tone ? `tile tone-${x.tone}` : 'tile'} key={x.k} title={x.title}>
          <dt>{x.k}</dt>
          <dd>
            {x.v} {x.sub && <small>{x.sub}</small>}
          </dd>
        </div>
      ))}
    </dl>
  );
}

function GroupPage({ s, route, now }: { s: State; route: Extract<Route, { view: 'group' }>; now: number }) {
  if (s.detailError && !s.detail) {
    return (
      <p class="error" role="alert">
        {s.detailError.status === 404 ? `There is no node group ${route.group}.` : s.detailError.detail} <a href="#/groups">All node groups</a>
      </p>
    );
  }
  const detail = s.detail?.name === route.group ? s.detail : null;
  if (!detail) return <p class="muted">Loading {route.group}…</p>;
  return (
    <>
      <div class="group-head">
        <h1>
          {detail.name}{' '}
          <span class="muted small">
            {detail.platform} platform · scope {detail.scope}
          </span>
        </h1>
        {detail.status === 'deleting' && <span class="badge tone-warn">deleting</span>}
        {!detail.ready && <span class="badge tone-bad">actor restarting</span>}
      </div>
      <Summary detail={detail} />
      <nav class="tabs" aria-label="Views of this group">
        {TABS.map(([tab, label]) => (
          <a key={tab} href={groupHref(detail.name, tab)} aria-current={route.tab === tab ? 'page' : undefined}>
            {label}
          </a>
        ))}
      </nav>
      {route.tab === 'nodes' && (
        <>
          <NodesView detail={detail} more={s.detailMore} now={now} changed={s.changed} />
          <RecentEvents events={s.events} group={detail.name} onMore={() => (location.hash = groupHref(detail.name, 'events'))} />
        </>
      )}
      {route.tab === 'streams' && <StreamsView group={detail.name} streams={s.streams} more={s.streamsMore} now={now} />}
      {route.tab === 'provisions' && <ProvisionsView detail={detail} provisions={s.provisions} more={s.provisionsMore} now={now} />}
      {route.tab === 'events' && <Timeline events={s.events} group={detail.name} />}
    </>
  );
}

function Console({ user, onLogout }: { user: string; onLogout: () => void }) {
  const s = useStore();
  const route = useRoute();
  const now = useNow(1000);
  useEffect(() => {
    start(session.token!);
    return () => stop();
  }, []);
  const group = route.view === 'group' ? route.group : null;
  useEffect(() => selectGroup(group), [group]);
  // No view named: the default group if there is one, else the first, else the list.
  useEffect(() => {
    if (route.view !== 'home' || s.groups === null) return;
    const first = s.groups.find((g) => g.name === 'default') ?? s.groups[0];
    location.replace(first ? groupHref(first.name) : '#/groups');
  }, [route.view, s.groups]);
  return (
    <>
      {/* biome-ignore lint/a11y/useValidAnchor: a skip link is a link; with hash routing, following "#main" would change the route, so it moves the focus instead */}
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href="#/groups" aria-label="Switchyard: all node groups">
          <span class="brand-mark" aria-hidden="true" />
          <span class="brand-name">Switchyard</span>
        </a>
        <label class="group-pick">
          <span class="visually-hidden">Node group</span>
          <select
            value={group ?? ''}
            onChange={(e) => {
              const v = (e.target as HTMLSelectElement).value;
              location.hash = v === '' ? '#/groups' : groupHref(v, route.view === 'group' ? route.tab : 'nodes');
            }}
          >
            <option value="">All node groups</option>
            {(s.groups ?? []).map((g) => (
              <option key={g.name} value={g.name}>
                {g.name}
                {g.status === 'deleting' ? ' (deleting)' : ''}
              </option>
            ))}
          </select>
        </label>
        <LiveBadge live={s.live} refreshedAt={s.refreshedAt} now={now} />
        <span class="spacer" />
        <a href="#/webhooks" class="header-link" aria-current={route.view === 'webhooks' ? 'page' : undefined}>
          Webhooks
        </a>
        <a href="/as/v1/docs" class="header-link">
          API docs
        </a>
        <span class="user muted" title="Logged in as">
          {user}
        </span>
        <button type="button" onClick={onLogout}>
          Log out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {route.view === 'groups' && <GroupsView groups={s.groups} error={s.groupsError} />}
        {route.view === 'group' && <GroupPage s={s} route={route} now={now} />}
        {route.view === 'webhooks' && <WebhooksView now={now} />}
        {route.view === 'home' &&
          (s.groupsError ? (
            <p class="error" role="alert">
              {s.groupsError}
            </p>
          ) : (
            <p class="muted">Loading…</p>
          ))}
      </main>
      <div class="toasts" role="status" aria-live="polite">
        {s.toasts.map((t) => (
          <div key={t.id} class={`toast tone-${t.kind === 'ok' ? 'ok' : 'bad'}`}>
            <span>{t.text}</span>
            <button type="button" class="link" onClick={() => dismiss(t.id)} aria-label="Dismiss">
              ×
            </button>
          </div>
        ))}
      </div>
      <ModalHost />
    </>
  );
}

type Phase = { kind: 'login'; notice: string | null } | { kind: 'password' } | { kind: 'console' };

function App() {
  const [phase, setPhase] = useState<Phase>(session.token ? { kind: 'console' } : { kind: 'login', notice: null });
  const [user, setUser] = useState(session.user ?? 'admin');
  useEffect(() => {
    authTrouble.onUnauthorized = (detail) => {
      session.clear();
      setPhase({ kind: 'login', notice: `Your session has ended: ${detail.replace(/;? *log in again\.?$/, '')}. Log in again.` });
    };
    authTrouble.onPasswordRequired = () => setPhase({ kind: 'password' });
  }, []);
  if (phase.kind === 'login') {
    return (
      <Login
        notice={phase.notice}
        onDone={(u, token) => {
          session.save(u, token);
          setUser(u);
          setPhase({ kind: 'console' });
        }}
      />
    );
  }
  if (phase.kind === 'password') {
    return (
      <ChangePassword
        user={user}
        onDone={(token) => {
          session.save(user, token);
          setPhase({ kind: 'console' });
        }}
        onCancel={() => {
          session.clear();
          setPhase({ kind: 'login', notice: 'Logged out.' });
        }}
      />
    );
  }
  return (
    <Console
      user={user}
      onLogout={() => {
        session.clear();
        setPhase({ kind: 'login', notice: 'Logged out.' });
      }}
    />
  );
}

render(<App />, document.getElementById('app')!);
