// Webhook endpoints and how their delivery stands (docs/webhooks.md): what each wants, what it
// has taken, what waits, and the last error with the time of the next attempt. Read every five
// seconds while shown; endpoints are made in the config file or through the API.
import { useEffect, useState } from 'preact/hooks';
import { type ApiError, listWebhooks, type Webhook } from './api.js';
import { ago, num } from './format.js';
import { DataTable } from './table.js';

export function WebhooksView({ now }: { now: number }) {
  const [hooks, setHooks] = useState<Webhook[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let live = true;
    const read = () =>
      listWebhooks().then(
        (h) => {
          if (!live) return;
          setHooks(h);
          setError(null);
        },
        (e: ApiError) => {
          if (live) setError(e.detail);
        },
      );
    void read();
    const timer = setInterval(read, 5000);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, []);
  return (
    <section aria-labelledby="webhooks-h">
      <h1 id="webhooks-h">Webhooks</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {hooks === null ? (
        <p class="muted">Loading webhooks…</p>
      ) : hooks.length === 0 ? (
        <p class="muted">
          No webhook endpoint. Add one in the config file's <code>webhooks</code> or with <code>POST /as/v1/webhooks</code>: every matching event is then POSTed to it, signed, in order.
        </p>
      ) : (
        <DataTable class="stack" caption="Webhook endpoints" columns={['Endpoint', 'Wants', 'Delivered', 'Waiting', 'Last success', 'Trouble']}>
          <tbody>
            {hooks.map((h) => (
              <tr key={h.id} data-webhook={h.id} class={h.delivery.consecutiveFailures > 0 ? 'changed' : undefined}>
                <th scope="row" data-label="Endpoint">
                  <span class="mono">{h.id}</span>
                  <span class="sub mono">{h.url}</span>
                  <span class="sub">from the {h.source === 'config' ? 'config file' : 'API'}</span>
                </th>
                <td data-label="Wants">
                  {h.events.length ? h.events.join(', ') : 'every event'}
                  {h.groups.length > 0 && <span class="sub">groups {h.groups.join(', ')}</span>}
                  {h.streams.length > 0 && <span class="sub">streams {h.streams.join(', ')}</span>}
                </td>
                <td data-label="Delivered" class="num">
                  {num(h.delivery.delivered)}
                </td>
                <td data-label="Waiting" class="num">
                  {num(h.delivery.backlog)}
                </td>
                <td data-label="Last success">{h.delivery.lastSuccessAt ? ago(h.delivery.lastSuccessAt, now) : 'never'}</td>
                <td data-label="Trouble">
                  {h.delivery.consecutiveFailures === 0 ? (
                    <span class="muted">none</span>
                  ) : (
                    <>
                      <span class="warn-text">
                        {num(h.delivery.consecutiveFailures)} failed: {h.delivery.lastError}
                      </span>
                      {h.delivery.nextAttemptAt && <span class="sub">next try in {Math.max(0, Math.round((h.delivery.nextAttemptAt - now) / 1000))} s</span>}
                    </>
                  )}
                  {h.delivery.lost > 0 && <span class="sub warn-text">{num(h.delivery.lost)} lost (the log dropped them first)</span>}
                </td>
              </tr>
            ))}
          </tbody>
        </DataTable>
      )}
    </section>
  );
}
