// Where webhook endpoints made through the API, and every endpoint's delivery state, are kept in
// the embedded default: LMDB's meta database (docs/persistence.md). A state is written after each
// delivery, not awaited: lost in a crash, its event is sent again (at least once).
import type { Database } from 'lmdb';
import type { DeliveryState } from '../policy/webhooks.js';
import { stored } from '../store/failures.js';
import type { WebhookEndpoint } from './delivery.js';
import type { WebhookKeeping } from './webhooks.js';

const ENDPOINT = 'webhook:';
const STATE = 'webhook-state:';

export class LmdbWebhookKeeping implements WebhookKeeping {
  constructor(private readonly meta: Database<unknown, string>) {}

  endpoints(): WebhookEndpoint[] {
    return [...this.meta.getRange({ start: ENDPOINT, end: `${ENDPOINT}\uffff` })].map(({ value }) => value as WebhookEndpoint);
  }

  async putEndpoint(e: WebhookEndpoint): Promise<void> {
    await stored(this.meta.put(`${ENDPOINT}${e.id}`, e));
  }

  async removeEndpoint(id: string): Promise<void> {
    await stored(this.meta.remove(`${ENDPOINT}${id}`));
  }

  state(id: string): DeliveryState | undefined {
    return this.meta.get(`${STATE}${id}`) as DeliveryState | undefined;
  }

  putState(id: string, s: DeliveryState): void {
    this.meta.put(`${STATE}${id}`, s).catch(() => {
      /* the disk refused: the next state written carries it */
    });
  }

  async removeState(id: string): Promise<void> {
    await stored(this.meta.remove(`${STATE}${id}`));
  }
}
