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

function Tokens({ group, node }: { group: string; node: Node }) {
  const [token, setToken] = useState<{ value: string; expiresIn: number } | null>(null);
  const [armed, setArmed] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const fail = (err: unknown) => setError(err instanceof ApiError ? `${err.detail} (${err.code})` : String(err));
  const issue = async () => {
    setError(null);
    try {
      const r = await issueNodeToken(group, node.id);
      setToken({ value: r.accessToken, expiresIn: r.expiresIn });
    } catch (err) {
      fail(err);
    }
  };
  const revoke = async () => {
    setError(null);
    try {
      const r = await revokeNodeTokens(group, node.id);
      setToken(null);
      setArmed(false);
      toast('ok', `Every token issued to ${node.id} so far is revoked (generation ${r.generation})`);
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
            Revoke every token of {node.id}
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

export function openNode(group: string, node: Node, now: number) {
  const listener = (l?: { protocol: string; port: number }) => (l ? `${l.protocol} ${l.port}` : '—');
  const p = node.platform as { type: string; address?: string; privateAddress?: string; pid?: number };
  const rows: Array<[string, ComponentChildren]> = [
    [
      'State',
      <>
        <StateBadge state={node.state} /> for {ago(node.stateSince, now).replace(' ago', '')}
      </>,
    ],
    ['Role, region', `${node.role}, ${node.region}`],
    ['Address', node.address ?? '—'],
    ['Publish listener', listener(node.listeners.publish)],
    ['Playback listener', listener(node.listeners.subscribe)],
    ['Parent', node.parent ?? '—'],
    ['Load / limit', `${num(node.load)} / ${node.limit === null ? '—' : num(node.limit)}`],
    ['Publishers · viewers', `${num(node.connections.publisher)} · ${num(node.connections.subscriber)}`],
    ['Streams', num(node.streams)],
    ['Last heartbeat', ago(node.lastHeartbeat, now)],
    ['Platform', [p.type, p.address, p.privateAddress && `private ${p.privateAddress}`, p.pid !== undefined && `pid ${p.pid}`].filter(Boolean).join(' · ')],
    ...(node.problem ? [['Problem', node.problem] as [string, string]] : []),
    ...(node.faultReason ? [['Fault reason', node.faultReason] as [string, string]] : []),
  ];
  openModal({
    kind: 'view',
    title: node.id,
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
        <Tokens group={group} node={node} />
      </>
    ),
  });
}
