// The dashboard's only way to the service: the public REST API with the admin's bearer token.
// The token lives in sessionStorage (gone with the tab, never sent by the browser on its own as a
// cookie would be). Types come from the API's own schemas, so a change there fails this build.
import type { Static, TSchema } from 'typebox';
import type { EventRecord } from '../../domain/events.js';
import type { NodeState, Role } from '../../domain/vocabulary.js';
import type { NodeGroupDetail, NodeGroupSummary, NodeView, ProblemSchema, StoredProvision, StreamStatsSchema, StreamView, WebhookViewSchema } from '../../schemas/api.js';

// The schemas build their role and state unions from arrays, which Static reads as never: those
// fields are typed here with the vocabulary's own unions.
type Load = { role: Role; connections: number; capacity: number };
type Raw<T extends TSchema> = Static<T>;
export type Node = Omit<Raw<typeof NodeView>, 'role' | 'state'> & { role: Role; state: NodeState };
export type GroupSummary = Omit<Raw<typeof NodeGroupSummary>, 'load'> & { load: Load[] };
type Scaling = Omit<Raw<typeof NodeGroupDetail>['scaling'][number], 'role'> & { role: Role };
export type GroupDetail = Omit<Raw<typeof NodeGroupDetail>, 'load' | 'nodeList' | 'scaling'> & { load: Load[]; nodeList: Node[]; scaling: Scaling[] };
type RawStream = Raw<typeof StreamView>;
type Ref<T> = Omit<T, 'state'> & { state: NodeState | null };
export type Stream = Omit<RawStream, 'origin' | 'transcoder' | 'edges'> & {
  origin: Ref<RawStream['origin']>;
  transcoder?: Ref<NonNullable<RawStream['transcoder']>>;
  edges: Array<{ nodeId: string; region: string; state: NodeState; subscribers: number }>;
};
export type Provision = Static<typeof StoredProvision>;
export type StreamStats = Raw<typeof StreamStatsSchema>;
export type Webhook = Raw<typeof WebhookViewSchema>;
export type { EventRecord };

// The problem body as its schema declares it (src/schemas/problem.ts builds it; this build has no Node types).
type ProblemBody = Raw<typeof ProblemSchema>;
export type FieldError = NonNullable<ProblemBody['errors']>[number];

/** A problem+json answer (README: errors), or a network failure as status 0. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly errors: FieldError[] = [],
    readonly retryAfter?: number,
  ) {
    super(detail);
  }
}

const TOKEN_KEY = 'switchyard.token';
const USER_KEY = 'switchyard.user';

export const session = {
  get token(): string | null {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  get user(): string | null {
    return sessionStorage.getItem(USER_KEY);
  },
  save(user: string, token: string): void {
    sessionStorage.setItem(TOKEN_KEY, token);
    sessionStorage.setItem(USER_KEY, user);
  },
  clear(): void {
    sessionStorage.removeItem(TOKEN_KEY);
  },
};

/** What the app does when the service refuses the token (401) or wants the password changed (403). */
export const authTrouble = {
  onUnauthorized: (_detail: string) => {},
  onPasswordRequired: () => {},
};

export const seg = (s: string) => encodeURIComponent(s);

/** The role a token claims (read for the page's sake only: the service checks every call). */
export function roleOf(token: string): string | null {
  try {
    const payload = token.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/');
    return (JSON.parse(atob(payload)) as { role?: unknown }).role as string;
  } catch {
    return null;
  }
}

async function problemOf(res: Response): Promise<ApiError> {
  const retry = Number(res.headers.get('retry-after'));
  let body: Partial<Pick<ProblemBody, 'code' | 'detail' | 'errors'>> = {};
  try {
    body = (await res.json()) as typeof body;
  } catch {
    /* not JSON: a proxy's page, say */
  }
  return new ApiError(
    res.status,
    body.code ?? `HTTP_${res.status}`,
    body.detail ?? res.statusText,
    Array.isArray(body.errors) ? body.errors : [],
    Number.isFinite(retry) && retry > 0 ? retry : undefined,
  );
}

/** Reacts to a refused token the same way wherever it happens (API calls, the event stream). */
export function noticeAuthProblem(e: ApiError): void {
  if (e.status === 401 && e.code !== 'INVALID_CREDENTIALS') authTrouble.onUnauthorized(e.detail);
  if (e.status === 403 && e.code === 'PASSWORD_CHANGE_REQUIRED') authTrouble.onPasswordRequired();
}

async function send(method: string, path: string, body: unknown, token: string | null): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      cache: 'no-store',
      headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
    });
  } catch {
    throw new ApiError(0, 'NETWORK', 'the service cannot be reached');
  }
  if (!res.ok) {
    const e = await problemOf(res);
    noticeAuthProblem(e);
    throw e;
  }
  return res;
}

export async function api<T>(method: string, path: string, body?: unknown, token: string | null = session.token): Promise<T> {
  const res = await send(method, path, body, token);
  if (res.status === 204) return undefined as T;
  return (await res.json()) as T;
}

/** A GET of a paged list (or of a group, whose nodes page): the answer, and whether more remain. */
async function paged<T>(path: string): Promise<{ value: T; more: boolean }> {
  const res = await send('GET', path, undefined, session.token);
  return { value: (await res.json()) as T, more: /rel="next"/.test(res.headers.get('link') ?? '') };
}

export { problemOf };

/** Lists ask for 1000 at a time, the most the API gives; past that the views say so. */
const MAX = 1000;

export interface LoginAnswer {
  accessToken: string;
  expiresIn: number;
}

export const login = (username: string, password: string) => api<LoginAnswer>('POST', '/as/v1/auth/login', { username, password }, null);
export const changePassword = (currentPassword: string, newPassword: string) => api<void>('POST', '/as/v1/auth/password', { currentPassword, newPassword });
export const listGroups = () => api<GroupSummary[]>('GET', `/as/v1/nodegroups?limit=${MAX}`);
export const getGroup = (name: string) => paged<GroupDetail>(`/as/v1/nodegroups/${seg(name)}?limit=${MAX}`);
export const listStreams = (group: string) => paged<Stream[]>(`/as/v1/streams?nodeGroup=${seg(group)}&limit=${MAX}`);
export const listProvisions = (group: string) => paged<Provision[]>(`/as/v1/provision/${seg(group)}?limit=${MAX}`);
export const nodeAction = (group: string, nodeId: string, action: 'drain' | 'doom') => api<{ nodeId: string; state: string }>('POST', `/as/v1/nodegroups/${seg(group)}/nodes/${seg(nodeId)}/${action}`);
export const createProvision = (group: string, json: string) => api<Provision>('POST', `/as/v1/provision/${seg(group)}`, json);
export const deleteProvision = (group: string, stream: string) => api<void>('DELETE', `/as/v1/provision/${seg(group)}/${seg(stream)}`);
export const createGroup = (json: string) => api<{ name: string }>('POST', '/as/v1/nodegroups', json);
export const replaceGroup = (name: string, json: string) => api<{ name: string }>('PUT', `/as/v1/nodegroups/${seg(name)}`, json);
export const deleteGroup = (name: string) => api<{ name: string; status: string }>('DELETE', `/as/v1/nodegroups/${seg(name)}`);
export const replaceProvision = (group: string, stream: string, json: string) => api<Provision>('PUT', `/as/v1/provision/${seg(group)}/${seg(stream)}`, json);
export const streamStats = (group: string, stream: string) => api<StreamStats>('GET', `/as/v1/streams/${seg(group)}/${seg(stream)}/stats`);
export const endStream = (group: string, stream: string) => api<void>('POST', `/as/v1/streams/${seg(group)}/${seg(stream)}/end`);
export const listWebhooks = () => api<Webhook[]>('GET', '/as/v1/webhooks');
export const issueNodeToken = (group: string, nodeId: string) => api<{ accessToken: string; expiresIn: number }>('POST', `/as/v1/nodegroups/${seg(group)}/nodes/${seg(nodeId)}/token`);
export const revokeNodeTokens = (group: string, nodeId: string) => api<{ nodeId: string; generation: number }>('POST', `/as/v1/nodegroups/${seg(group)}/nodes/${seg(nodeId)}/token/revoke`);
