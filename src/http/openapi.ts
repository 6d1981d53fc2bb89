// The OpenAPI 3.1 document, rendered from the same route definitions that are enforced.
import type { TSchema } from 'typebox';
import { ProblemSchema } from '../schemas/api.js';
import type { RouteDef } from './route.js';

const plain = (schema: TSchema): unknown => JSON.parse(JSON.stringify(schema));

export function buildOpenApi(routes: readonly RouteDef[], version: string): unknown {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const parameters: unknown[] = [];
    for (const [where, schema] of [['path', r.params], ['query', r.query]] as const) {
      const props = (schema as { properties?: Record<string, TSchema>; required?: string[] } | undefined)?.properties ?? {};
      const required = new Set((schema as { required?: string[] } | undefined)?.required ?? []);
      for (const [name, s] of Object.entries(props)) {
        const { description, ...rest } = plain(s) as { description?: string };
        parameters.push({ name, in: where, required: where === 'path' || required.has(name), ...(description ? { description } : {}), schema: rest });
      }
    }
    const responses: Record<string, unknown> = {};
    for (const [status, spec] of Object.entries(r.responses)) {
      responses[status] = {
        description: spec.description,
        ...(spec.schema ? { content: { [spec.contentType ?? 'application/json']: { schema: spec.schema === ProblemSchema ? { $ref: '#/components/schemas/Problem' } : plain(spec.schema) } } } : {}),
      };
    }
    if (r.access !== 'public' && r.access !== 'metrics') {
      responses['401'] ??= { description: 'UNAUTHORIZED or TOKEN_EXPIRED', content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } };
    }
    (paths[r.path] ??= {})[r.method.toLowerCase()] = {
      operationId: r.operationId,
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      tags: [r.tag],
      ...(r.access === 'public' ? { security: [] } : { security: [{ bearer: [] }], 'x-switchyard-access': r.access }),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: plain(r.body) } } } } : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Switchyard',
      version,
      description:
        'Control plane for clusters of media-server nodes. Errors are application/problem+json (RFC 9457) with a `code`; lists page with ?limit= and ?after= and a Link rel="next" header.',
    },
    servers: [{ url: '/' }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: { Problem: plain(ProblemSchema) },
    },
    paths,
  };
}
