// The OpenAPI 3.1 document, rendered from the same route definitions that are enforced.
import type { TSchema } from 'typebox';
import { ProblemSchema } from '../schemas/api.js';
import { problemResponse, type RouteDef, type ResponseSpec } from './route.js';

const plain = (schema: TSchema): unknown => JSON.parse(JSON.stringify(schema));

export interface OpenApiOptions {
  /** Whether /metrics asks for a token (server.metricsAuth as resolved for the bind). */
  metricsAuth: 'none' | 'admin';
}

/**
 * The answers every operation of a kind can give, whatever its handler does: a bad path or query
 * parameter (unknown ones included), a missing, bad or foreign token, a body that is not JSON, too
 * large, or too slow. A route's own entry for a status wins (it says more).
 */
function generic(r: RouteDef, secured: boolean): Record<number, ResponseSpec> {
  const out: Record<number, ResponseSpec> = {
    400: problemResponse(
      r.body
        ? 'VALIDATION_FAILED (a bad path or query parameter, an unknown query parameter, a bad body field) or BAD_JSON'
        : 'VALIDATION_FAILED: a bad path or query parameter, or an unknown query parameter',
    ),
  };
  if (secured) {
    out[401] = problemResponse('UNAUTHORIZED or TOKEN_EXPIRED (with WWW-Authenticate: Bearer)');
    out[403] = problemResponse('FORBIDDEN (a token of another role) or PASSWORD_CHANGE_REQUIRED');
  }
  if (r.body) {
    out[408] = problemResponse('REQUEST_TIMEOUT: the body did not arrive within server.requestTimeout');
    out[413] = problemResponse('PAYLOAD_TOO_LARGE: over server.bodyLimit');
    out[415] = problemResponse('UNSUPPORTED_MEDIA_TYPE: the body is not application/json');
  }
  return out;
}

export function buildOpenApi(routes: readonly RouteDef[], version: string, options: OpenApiOptions = { metricsAuth: 'admin' }): unknown {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const parameters: unknown[] = [];
    for (const [where, schema] of [
      ['path', r.params],
      ['query', r.query],
    ] as const) {
      const props = (schema as { properties?: Record<string, TSchema>; required?: string[] } | undefined)?.properties ?? {};
      const required = new Set((schema as { required?: string[] } | undefined)?.required ?? []);
      for (const [name, s] of Object.entries(props)) {
        const { description, ...rest } = plain(s) as { description?: string };
        const example = (where === 'path' ? r.example?.params : r.example?.query)?.[name];
        parameters.push({ name, in: where, required: where === 'path' || required.has(name), ...(description ? { description } : {}), schema: rest, ...(example !== undefined ? { example } : {}) });
      }
    }
    const secured = r.access !== 'public' && !(r.access === 'metrics' && options.metricsAuth === 'none');
    const responses: Record<string, unknown> = {};
    const all = { ...generic(r, secured), ...r.responses };
    const success = Object.keys(r.responses)
      .map(Number)
      .find((status) => status < 300);
    for (const [status, spec] of Object.entries(all).sort(([a], [b]) => Number(a) - Number(b))) {
      const example = Number(status) === success && r.example?.response !== undefined ? { example: r.example.response } : {};
      responses[status] = {
        description: spec.description,
        ...(spec.schema
          ? { content: { [spec.contentType ?? 'application/json']: { schema: spec.schema === ProblemSchema ? { $ref: '#/components/schemas/Problem' } : plain(spec.schema), ...example } } }
          : {}),
      };
    }
    (paths[r.path] ??= {})[r.method.toLowerCase()] = {
      operationId: r.operationId,
      summary: r.summary,
      ...(r.description ? { description: r.description } : {}),
      tags: [r.tag],
      ...(secured ? { security: [{ bearer: [] }], 'x-switchyard-access': r.access === 'metrics' ? 'admin' : r.access } : { security: [] }),
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(r.body ? { requestBody: { required: true, content: { 'application/json': { schema: plain(r.body), ...(r.example?.body !== undefined ? { example: r.example.body } : {}) } } } } : {}),
      ...(r.rawBody
        ? {
            requestBody: {
              required: true,
              description: r.rawBody.description,
              content: { [r.rawBody.contentType]: { schema: { type: 'string' }, ...(r.rawBody.example !== undefined ? { example: r.rawBody.example } : {}) } },
            },
          }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Switchyard',
      version,
      description: 'Control plane for clusters of media-server nodes. Errors are application/problem+json (RFC 9457) with a `code`; lists page with ?limit= and ?after= and a Link rel="next" header.',
    },
    servers: [{ url: '/' }],
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' } },
      schemas: { Problem: plain(ProblemSchema) },
    },
    paths,
  };
}
