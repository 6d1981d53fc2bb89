// Cluster mode, internal: Terraform's `http` backend for each Terraform node group, spoken by the
// real CLI that this instance's supervisor runs (docs/cluster.md, "Terraform state"). Not an API
// route: not in the OpenAPI document, not for people; the credentials are derived from a secret of
// this process that only its own Terraform gets, through its environment
// (src/platforms/terraform/backend.ts). The state and its lock are in JetStream
// (src/cluster/terraform-state.ts); what a request may do is decided there.
//
//   GET    …/{nodeGroup}/state        the state (200), or 204 when there is none
//   POST   …/{nodeGroup}/state?ID=…   store it: only under the lock this instance holds
//   LOCK   …/{nodeGroup}/lock         Terraform's LockInfo: 200, or 423/409 with the holder's
//   UNLOCK …/{nodeGroup}/lock         the same LockInfo: 200, or 409
//
// The group comes from the path only as a key (checked against the name pattern, base64url in the
// bucket): nothing of a request becomes a path.
import { createHash } from 'node:crypto';
import type Router from '@koa/router';
import type { TerraformState, StateAnswer, LockInfo } from '../../cluster/terraform-state.js';
import { isName } from '../../domain/vocabulary.js';
import { authorized, LOCK_ROUTE, STATE_ROUTE } from '../../platforms/terraform/backend.js';
import type { AppContextExtras, AppState, Ctx } from '../context.js';
import { readBytes, readJsonBody } from '../middleware/json-body.js';
import { Problem, problems } from '../problem.js';
import type { Services } from '../services.js';

export interface TerraformStateBackend {
  /** This process's secret: the credentials are derived from it per group. */
  secret: Uint8Array;
  state: Pick<TerraformState, 'read' | 'write' | 'lock' | 'unlock'>;
}

/** A state past this is refused before it is read whole (gzipped, it must fit a NATS message anyway). */
const MAX_STATE_BYTES = 64 << 20;
const ID_RE = /^[A-Za-z0-9._:-]{1,128}$/;

export function mountTerraformState(router: Router<AppState, AppContextExtras>, services: Services): void {
  const b = services.terraformState;
  if (!b) return;
  const koa = (route: string) => route.replace('{nodeGroup}', ':nodeGroup');

  const handler = (route: string, handle: (ctx: Ctx, group: string) => Promise<void>) => async (ctx: Ctx) => {
    ctx.state.route = route;
    const group = (ctx as unknown as { params: Record<string, string> }).params.nodeGroup ?? '';
    // Credentials first: nothing, not even whether a group exists, for anyone else.
    if (!authorized(b.secret, group, ctx.get('authorization') || undefined)) {
      throw new Problem(401, 'UNAUTHORIZED', "this is the Terraform state of this instance's own supervisor: wrong or missing credentials", {
        headers: { 'WWW-Authenticate': 'Basic realm="switchyard-terraform"' },
      });
    }
    if (!isName(group) || !services.actors.group(group)) throw problems.notFound('NODE_GROUP_NOT_FOUND', `node group '${group.slice(0, 40)}' does not exist`);
    try {
      await handle(ctx, group);
    } catch (err) {
      if (err instanceof Problem) throw err;
      // NATS without a leader, a timeout: Terraform retries 5xx answers by itself.
      ctx.log.warn({ err, group }, 'the Terraform state could not be reached in JetStream');
      throw new Problem(503, 'STORE_UNAVAILABLE', 'the Terraform state store (NATS JetStream) did not answer; retry', { retryAfter: 1 });
    }
  };

  const answer = (ctx: Ctx, a: StateAnswer) => {
    if (a.status === 200) {
      ctx.status = 200;
      ctx.body = '';
    } else if (a.lock) {
      // Terraform reads the holder's LockInfo from a 423/409 and shows it.
      ctx.status = a.status;
      ctx.body = a.lock;
    } else throw new Problem(a.status, a.status === 413 ? 'PAYLOAD_TOO_LARGE' : 'CONFLICT', a.message ?? 'refused');
  };

  const lockInfo = async (ctx: Ctx): Promise<LockInfo> => {
    const info = (await readJsonBody(ctx, services.config.server.bodyLimit)) as Partial<LockInfo> | null;
    if (!info || typeof info !== 'object' || typeof info.ID !== 'string' || !ID_RE.test(info.ID)) {
      throw problems.validation([{ path: 'body.ID', message: "must be Terraform's lock id" }]);
    }
    return info as LockInfo;
  };

  router.get(
    'terraformStateGet',
    koa(STATE_ROUTE),
    handler(STATE_ROUTE, async (ctx, group) => {
      const data = await b.state.read(group);
      if (!data) {
        ctx.status = 204;
        return;
      }
      ctx.type = 'application/json';
      ctx.set('Content-MD5', createHash('md5').update(data).digest('base64'));
      ctx.body = Buffer.from(data);
    }),
  );

  router.post(
    'terraformStatePost',
    koa(STATE_ROUTE),
    handler(STATE_ROUTE, async (ctx, group) => {
      const id = ctx.query.ID;
      const extra = Object.keys(ctx.query).filter((k) => k !== 'ID');
      if (extra.length > 0 || (id !== undefined && (typeof id !== 'string' || !ID_RE.test(id)))) {
        throw problems.validation([{ path: 'query.ID', message: "must be Terraform's lock id, and the only parameter" }]);
      }
      let data: Buffer;
      try {
        data = await readBytes(ctx.req, MAX_STATE_BYTES, ctx.get('content-length') || undefined);
      } catch (err) {
        if ((err as { type?: string }).type === 'entity.too.large') throw new Problem(413, 'PAYLOAD_TOO_LARGE', `a Terraform state of more than ${MAX_STATE_BYTES} bytes`);
        throw new Problem(400, 'BAD_REQUEST', 'the state could not be read');
      }
      const md5 = ctx.get('content-md5');
      if (md5 && md5 !== createHash('md5').update(data).digest('base64')) throw new Problem(400, 'BAD_REQUEST', 'the state does not match its Content-MD5');
      answer(ctx, await b.state.write(group, id, data));
    }),
  );

  router.register(
    koa(LOCK_ROUTE),
    ['LOCK'],
    handler(LOCK_ROUTE, async (ctx, group) => answer(ctx, await b.state.lock(group, await lockInfo(ctx)))),
    { name: 'terraformStateLock' },
  );
  router.register(
    koa(LOCK_ROUTE),
    ['UNLOCK'],
    handler(LOCK_ROUTE, async (ctx, group) => answer(ctx, await b.state.unlock(group, await lockInfo(ctx)))),
    { name: 'terraformStateUnlock' },
  );
}
