// A refusal as the layers below HTTP say it (the group model and actor, the node group registry):
// the status and code the API answers with (docs/api.md, Errors). One type for all of them; the
// front end turns it into a problem+json answer.
export interface Failure {
  ok: false;
  status: 400 | 403 | 404 | 409 | 429 | 503;
  code: string;
  detail: string;
  /** Seconds, for the Retry-After header. */
  retryAfter?: number;
  /** The fields at fault, for a 400. */
  errors?: Array<{ path: string; message: string }>;
}
