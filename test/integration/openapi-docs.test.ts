// The API reference (GET /as/v1/openapi.json, rendered at /as/v1/docs) explains every operation:
// each has a summary, a description and an example of a request or of its answer.
import test from 'ava';
import { startTestService } from '../helpers/service.js';

interface Operation {
  operationId: string;
  summary?: string;
  description?: string;
  parameters?: Array<{ example?: unknown }>;
  requestBody?: { content: Record<string, { example?: unknown }> };
  responses: Record<string, { content?: Record<string, { example?: unknown }> }>;
}

test('every operation has a summary, a description and an example', async (t) => {
  const svc = await startTestService();
  t.teardown(() => svc.close());
  const doc = (await svc.get('/as/v1/openapi.json', null)).json as { paths: Record<string, Record<string, Operation>> };
  const operations = Object.values(doc.paths).flatMap((methods) => Object.values(methods));
  t.true(operations.length >= 25);
  const lacking = (what: string, has: (op: Operation) => boolean) => operations.filter((op) => !has(op)).map((op) => `${op.operationId} has no ${what}`);
  const examples = (op: Operation) =>
    (op.parameters ?? []).some((p) => p.example !== undefined) ||
    Object.values(op.requestBody?.content ?? {}).some((c) => c.example !== undefined) ||
    Object.values(op.responses).some((r) => Object.values(r.content ?? {}).some((c) => c.example !== undefined));
  t.deepEqual(
    [
      ...lacking('summary', (op) => (op.summary ?? '').length > 10),
      ...lacking('description', (op) => (op.description ?? '').length > 20 && op.description !== op.summary),
      ...lacking('example', examples),
    ],
    [],
  );
});
