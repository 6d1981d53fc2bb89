// A route is data: method, path, who may call it, the schemas of its input and output, and a
// handler. mount() compiles the checks once and registers it on the router; openapi.ts renders
// the same data as the OpenAPI 3.1 document, so the document cannot drift from what is enforced.
import type Router from '@koa/router';
import type { Next } from 'koa';
import type { Static, TObject, TSchema } from 'typebox';
import { ProblemSchema } from '../schemas/api.js';
import { compile, compileQueryConverter, type Checker } from '../schemas/validate.js';
import type { AppContextExtras, AppState, Ctx } from './context.js';
import { readJsonBody } from './middleware/json-body.js';
import { problems } from './problem.js';
import { PROBLEM_CONTENT_TYPE, type FieldProblem } from '../schemas/problem.js';

/** Who may call a route. `metrics` follows the server.metricsAuth setting. */
export type Access = 'public' | 'app' | 'admin' | 'node' | 'metrics';

export interface ResponseSpec {
  description: string;
  schema?: TSchema;
  contentType?: string;
  headers?: Record<string, string>;
}

type In<T extends TSchema | undefined, Fallback> = T extends TSchema ? Static<T> : Fallback;

export interface RouteDef<P extends TObject | undefined = TObject | undefined, Q extends TObject | undefined = TObject | undefined, B extends TSchema | undefined = TSchema | undefined> {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE' | 'PATCH' | 'OPTIONS';
  /** OpenAPI form: /as/v1/provision/{nodeGroup}. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  access: Access;
  params?: P;
  query?: Q;
  body?: B;
  /** A body that is not JSON (the WebRTC proxy's SDP): read by the handler itself; shown in the OpenAPI document. */
  rawBody?: { contentType: string; description: string; example?: string };
  /** Answers carry CORS headers (errors from the access guard too): for browsers calling from other origins (the WebRTC proxy). */
  cors?: Record<string, string>;
  /** Checks a schema cannot say (uniqueness across items, say); returns the field problems. */
  refine?: (body: In<B, undefined>) => FieldProblem[];
  /**
   * Checks against the service's current state (a region the group lacks, say), run whatever
   * else is wrong so that one answer names every bad field; the body may not match its schema.
   */
  against?: (params: Record<string, string>, body: unknown) => FieldProblem[];
  responses: Record<number, ResponseSpec>;
  /**
   * A request that works against the shipped default config (group `default`, regions `us-east`
   * and `eu-west`), shown in the OpenAPI document and the docs page; the contract test sends it.
   */
  example?: RouteExample;
  handle(ctx: Ctx, input: { params: In<P, Record<string, never>>; query: In<Q, Record<string, never>>; body: In<B, undefined> }): Promise<void> | void;
}

export interface RouteExample {
  params?: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
  /** The success answer's body, when it helps to see one. */
  response?: unknown;
}

/** An error answer in the OpenAPI document. */
export const problemResponse = (description: string): ResponseSpec => ({ description, schema: ProblemSchema, contentType: PROBLEM_CONTENT_TYPE });

/** Identity, for type inference of a route's inputs from its schemas. */
export function route<P extends TObject | undefined, Q extends TObject | undefined, B extends TSchema | undefined>(def: RouteDef<P, Q, B>): RouteDef<P, Q, B> {
  return def;
}

export interface MountOptions {
  bodyLimit: number;
  guard(access: Access): (ctx: Ctx, next: Next) => Promise<void>;
}

function checkQuery(
  checker: Checker<unknown>,
  convert: (raw: Record<string, string>) => Record<string, unknown>,
  raw: Record<string, string | string[] | undefined>,
): { value: unknown; errors: FieldProblem[] } {
  const errors: FieldProblem[] = [];
  const flat: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (Array.isArray(v)) errors.push({ path: `query.${k}`, message: 'must be given once' });
    else if (v !== undefined) flat[k] = v;
  }
  const value = convert(flat);
  if (errors.length === 0 && !checker.check(value)) errors.push(...checker.explain(value, 'query'));
  return { value, errors };
}

export function mount(router: Router<AppState, AppContextExtras>, routes: readonly RouteDef[], options: MountOptions): void {
  for (const def of routes) {
    const koaPath = def.path.replace(/\{(\w+)\}/g, ':$1');
    const params = def.params ? compile<unknown>(def.params) : undefined;
    const query = def.query ? compile<unknown>(def.query) : undefined;
    const convertQuery = def.query ? compileQueryConverter(def.query) : undefined;
    const body = def.body ? compile<unknown>(def.body) : undefined;
    const handler = async (ctx: Ctx) => {
      const errors: FieldProblem[] = [];
      let p: unknown = {};
      if (params) {
        p = { ...(ctx as unknown as { params: Record<string, string> }).params };
        if (!params.check(p)) errors.push(...params.explain(p, 'path'));
      }
      let q: unknown = {};
      // Most lookups carry no query at all: nothing to convert or check then. A parameter no
      // schema names is refused, not ignored: a misspelt `?nodegroup=` must not quietly mean the
      // default group.
      if (ctx.querystring !== '') {
        if (query) {
          const r = checkQuery(query, convertQuery!, ctx.query as Record<string, string | string[] | undefined>);
          q = r.value;
          errors.push(...r.errors);
        } else {
          for (const name of Object.keys(ctx.query)) errors.push({ path: `query.${name}`, message: 'is not a parameter of this operation' });
        }
      }
      let b: unknown;
      if (body) {
        // Read even when the path or query is bad, so that one answer names every bad field; a
        // body that cannot be read then leaves those errors to speak.
        let raw: unknown;
        try {
          raw = await readJsonBody(ctx, options.bodyLimit);
        } catch (err) {
          if (errors.length === 0) throw err;
          throw problems.validation(errors);
        }
        // Defaults the schema declares are filled in before the check, as for the config file.
        b = body.withDefaults(raw);
        if (!body.check(b)) errors.push(...body.explain(b, 'body'));
        else if (def.refine) errors.push(...def.refine(b as never));
        if (def.against) {
          const flagged = new Set(errors.map((e) => e.path));
          for (const e of def.against(p as Record<string, string>, b)) if (!flagged.has(e.path)) errors.push(e);
        }
      }
      if (errors.length > 0) throw problems.validation(errors);
      await def.handle(ctx, { params: p as never, query: q as never, body: b as never });
    };
    // One middleware per route, so the router composes no chain for it on every request.
    const guard = options.guard(def.access);
    const verb = def.method.toLowerCase() as 'get' | 'post' | 'put' | 'delete' | 'patch' | 'options';
    const cors = def.cors;
    router[verb](def.operationId, koaPath, async (ctx: Ctx) => {
      ctx.state.route = def.path;
      if (cors) ctx.set(cors);
      await guard(ctx, () => handler(ctx));
    });
  }
}
