// Cluster mode: a group's Terraform state lives in JetStream (src/cluster/terraform-state.ts) and
// the CLI reaches it through Terraform's own `http` backend, served by this instance on its own
// port (src/http/routes/terraform-state.ts). What both sides agree on lives here: the route's path
// and the credentials.
//
// The credentials are derived from a random secret of this process (never written anywhere) and
// the group's name: they reach Terraform through its environment (TF_HTTP_USERNAME,
// TF_HTTP_PASSWORD), never a file. Per group, so that what a module's own commands could see of
// them (local-exec inherits Terraform's environment) opens that group's state and no other.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** The route's path for a group's state (the group name is checked against NAME_PATTERN first). */
export const STATE_ROUTE = '/as/v1/internal/terraform/{nodeGroup}/state';
export const LOCK_ROUTE = '/as/v1/internal/terraform/{nodeGroup}/lock';

export interface BackendSettings {
  /** This instance's own base URL (its listening address: Terraform runs on the same machine). */
  url: string;
  /** The process's secret, 32 random bytes. */
  secret: Uint8Array;
}

export const USERNAME = 'switchyard-terraform';

export function passwordOf(secret: Uint8Array, group: string): string {
  return createHmac('sha256', secret).update(`terraform-state:${group}`).digest('base64url');
}

/** The `terraform.backend.http` block of the root module: addresses only, no credentials. */
export function httpBackend(b: Pick<BackendSettings, 'url'>, group: string): Record<string, unknown> {
  const at = (route: string) => `${b.url}${route.replace('{nodeGroup}', encodeURIComponent(group))}`;
  return {
    address: at(STATE_ROUTE),
    lock_address: at(LOCK_ROUTE),
    unlock_address: at(LOCK_ROUTE),
    // Terraform's defaults, said out loud: the route answers these methods.
    lock_method: 'LOCK',
    unlock_method: 'UNLOCK',
  };
}

/** The environment Terraform gets the credentials from. */
export function backendEnv(b: BackendSettings, group: string): Record<string, string> {
  return { TF_HTTP_USERNAME: USERNAME, TF_HTTP_PASSWORD: passwordOf(b.secret, group) };
}

/** Whether an Authorization header carries this group's credentials (constant time). */
export function authorized(secret: Uint8Array, group: string, header: string | undefined): boolean {
  const m = /^Basic ([A-Za-z0-9+/=]{1,400})$/.exec(header ?? '');
  if (!m) return false;
  const given = Buffer.from(Buffer.from(m[1]!, 'base64').toString('utf8'));
  const expected = Buffer.from(`${USERNAME}:${passwordOf(secret, group)}`);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
