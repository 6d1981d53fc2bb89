// The Koa context as this service uses it.
import type { ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import type { Claims } from '../auth/tokens.js';

export interface AppState {
  /** Verified token claims (koa-jwt's `key: 'user'`). */
  user?: Claims;
  jwtOriginalError?: Error;
  /** The route's path pattern, for metrics and logs (bounded cardinality). */
  route?: string;
}

export interface AppContextExtras {
  requestId: string;
  log: Logger;
}

export type Ctx = ParameterizedContext<AppState, AppContextExtras>;
