// One node in full, as of when it was opened: where it listens and runs, its load, and its node
// tokens. A static fleet's agents need a token each (README: platforms); a token that leaked is
// revoked here, which refuses its heartbeats at once (the node goes FAULT unless given a new one).
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, issueNodeToken, revokeNodeTokens, type Node } from './api.js';
import { openModal } from './dialogs.js';
import { ago, duration, num } from './format.js';
import { StateBadge } from './badges.js';
import { toast } from './store.js';

function Tokens({ group, n }: { group: string; n: Node }) {
  const [token, setToken] = useState<{ value: string; expiresIn: number } | null>(null);
  const [armed, setArmed] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const fail = (err: unknown) => setError(err instanceof ApiError ? `${err.detail} (${err.code})` : String(err));
  const issue = async () => {
    setError(null);
    try {
      const r = await issueNodeToken(group, n.id);
      setToken({ value: r.accessToken, expiresIn: r.expiresIn });
    } catch (err) {
      fail(err);
    }
  };
  const revoke = async () => {
    setError(null);
    try {
      const r = await revokeNodeTokens(group, n.id);
      setToken(null);
      setArmed(false);
      toast('ok', `Every token issued to ${n.id} so far is revoked (generation ${r.generation})`);
    } catch (err) {
      fail(err);
    }
  };
  return (
    <section aria-labelledby="tokens-h">
      <h3 id="tokens-h">Node tokens</h3>
      <p class="muted small">For the node's agent (SWITCHYARD_NODE_TOKEN): static fleets need one each; local and Terraform nodes get theirs from their platform.</p>
      <div class="toolbar">
        <button type="button" onClick={() => void issue()}>
          Issue a token
        </button>
        {armed ? (
          <button type="button" class="danger" onClick={() => void revoke()}>
            Revoke every token of {n.id}
          </button>
        ) : (
          <button type="button" class="danger-outline" onClick={() => setArmed(true)}>
            Revoke tokens…
          </button>
        )}
      </div>
      {armed && <p class="notice">Its heartbeats are refused at once, and its node channel closes: it goes FAULT after nodeTimeout unless its agent gets a new token.</p>}
      {token && (
        <>
          <label for="node-token">Token (valid {duration(token.expiresIn * 1000)}; shown once)</label>
          <textarea id="node-token" class="editor token" readOnly rows={3} value={token.value} onFocus={(e) => (e.target as HTMLTextAreaElement).select()} />
        </>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}

export function openNode(group: string, n: Node, now: number) {
  const listener = (l?: { protocol: string; port: number }) => (l ? `${l.protocol} ${l.port}` : '—');
  const p = n.platform as { type: string; address?: string; privateAddress?: string; pid?: number };
  const rows: Array<[string, ComponentChildren]> = [
    [
      'State',
      <>
        <StateBadge state={n.state} /> for {ago(n.stateSince, now).replace(' ago', '')}
      </>,
    ],
    ['Role, region', `${n.role}, ${n.region}`],
    ['Address', n.address ?? '—'],
    ['Publish listener', listener(n.listeners.publish)],
    ['Playback listener', listener(n.listeners.subscribe)],
    ['Parent', n.parent ?? '—'],
    ['Load / limit', `${num(n.load)} / ${n.limit === null ? '—' : num(n.limit)}`],
    ['Publishers · viewers', `${num(n.connections.publisher)} · ${num(n.connections.subscriber)}`],
    ['Streams', num(n.streams)],
    ['Last heartbeat', ago(n.lastHeartbeat, now)],
    ['Platform', [p.type, p.address, p.privateAddress && `private ${p.privateAddress}`, p.pid !== undefined && `pid ${p.pid}`].filter(Boolean).join(' · ')],
    ...(n.problem ? [['Problem', n.problem] as [string, string]] : []),
    ...(n.faultReason ? [['Fault reason', n.faultReason] as [string, string]] : []),
  ];
  openModal({
    kind: 'view',
    title: n.id,
    body: (
      <>
        <dl class="facts">
          {rows.map(([k, v]) => (
            <div key={k}>
              <dt>{k}</dt>
              <dd>{v}</dd>
            </div>
          ))}
        </dl>
        <Tokens group={group} n={n} />
      </>
    ),
  });
}
