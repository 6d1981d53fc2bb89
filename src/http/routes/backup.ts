// A backup of the running service's database (docs/operations.md, "Backups"): LMDB's own copy,
// taken inside this process (src/store/backup.ts) and streamed: an LMDB environment that a stopped
// service starts on. `switchyard backup` uses it while the service runs.
import Type from 'typebox';
import { BackupRefused } from '../../store/backup.js';
import { Problem } from '../problem.js';
import { problemResponse, route, type RouteDef } from '../route.js';
import type { Services } from '../services.js';

export function backupRoutes(services: Services): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/as/v1/admin/backup',
      operationId: 'backup',
      summary: "A consistent copy of the service's database (LMDB), taken while it runs",
      description:
        "LMDB's own compacting copy inside one read transaction of the running service: every write acknowledged before the copy began is in it, and writes go on meanwhile. The answer is the copy: save it as switchyard.mdb in an empty data directory, and a stopped service starts on it (docs/operations.md). It holds everything durable: node groups, nodes, bindings, provisions, users and their password hashes, the signing key, the event log; keep it as secret as the data directory. One backup at a time (409). The copy is made on the data directory's device first, and refused (507) when it would leave less free than minFreeBytes. In cluster mode it is this instance's copy only: back up JetStream (docs/cluster.md).",
      // The answer is binary: the example says what it is.
      example: { response: '(an LMDB file, as long as Content-Length says: save it as switchyard.mdb)' },
      tag: 'system',
      access: 'admin',
      responses: {
        200: {
          description: 'the copy, as an LMDB file (Content-Length set)',
          schema: Type.String({ format: 'binary' }),
          contentType: 'application/octet-stream',
          headers: { 'Content-Disposition': 'attachment; filename="switchyard-<time>.mdb"' },
        },
        401: problemResponse('UNAUTHORIZED'),
        403: problemResponse('FORBIDDEN'),
        409: problemResponse('CONFLICT: a backup is under way'),
        507: problemResponse('INSUFFICIENT_STORAGE: the copy would leave less free space than minFreeBytes'),
      },
      async handle(ctx) {
        let taken: Awaited<ReturnType<NonNullable<Services['backups']>['take']>>;
        try {
          if (!services.backups) throw new Problem(409, 'CONFLICT', 'backups are not offered by this service');
          taken = await services.backups.take();
        } catch (err) {
          if (err instanceof BackupRefused) throw err.reason === 'busy' ? new Problem(409, 'CONFLICT', err.message, { retryAfter: 10 }) : new Problem(507, 'INSUFFICIENT_STORAGE', err.message);
          throw err;
        }
        services.log.info({ bytes: taken.bytes }, 'a backup of the database was taken');
        ctx.status = 200;
        ctx.type = 'application/octet-stream';
        ctx.length = taken.bytes;
        ctx.set('Content-Disposition', `attachment; filename="switchyard-${new Date(services.now()).toISOString().replace(/[:.]/g, '-')}.mdb"`);
        ctx.set('Cache-Control', 'no-store');
        ctx.body = taken.stream;
      },
    }),
  ];
}
