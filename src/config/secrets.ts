// Secrets a node group carries (its admission webhook's signing secret) are never shown back: a
// node group as the API answers it has them replaced by a marker, and a replace that sends the
// marker back (an editor's round trip: read, change something else, write) keeps the stored one.
import type { NodeGroup } from './types.js';

export const SECRET_PLACEHOLDER = 'whsec_(kept)';

/** The group as the API shows it. */
export function withoutSecrets(group: NodeGroup): NodeGroup {
  const hook = group.admission.webhook;
  if (!hook) return group;
  return { ...group, admission: { ...group.admission, webhook: { ...hook, secret: SECRET_PLACEHOLDER } } };
}

/** A replace's body with the marker put back to the stored secret (the body is a request's: anything). */
export function keepSecrets(raw: unknown, stored: NodeGroup): unknown {
  const hook = (raw as { admission?: { webhook?: { secret?: unknown } } } | null)?.admission?.webhook;
  const secret = stored.admission.webhook?.secret;
  if (!hook || typeof hook !== 'object' || hook.secret !== SECRET_PLACEHOLDER || secret === undefined) return raw;
  const copy = structuredClone(raw) as { admission: { webhook: { secret: string } } };
  copy.admission.webhook.secret = secret;
  return copy;
}
