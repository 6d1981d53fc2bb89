// The OpenAPI document tells the truth (security audit of 2026-11): every operation it lists is
// driven with generated valid and invalid inputs (path and query parameters, bodies, tokens of
// every kind), and every answer must have a status the document declares for that operation,
// the content type it declares, and a body that matches the declared schema. No 5xx but the 503s
// it declares.
import test from 'ava';
import fc from 'fast-check';
import { Compile } from 'typebox/compile';
import { hash } from '../../src/auth/scrypt-task.js';
import { allInService } from '../helpers/fake-node.js';
import { request } from '../helpers/http.js';
import { arbitraryOf, type JsonSchema } from '../helpers/schema-arbitrary.js';
import { staticGroup, startTestService, type TestService } from '../helpers/service.js';

interface Operation {
  operationId: string;
  parameters?: Array<{ name: string; in: 'path' | 'query'; required: boolean; schema: JsonSchema; example?: string }>;
  requestBody?: { content: Record<string, { schema: JsonSchema; example?: unknown }> };
  responses: Record<string, { description: string; content?: Record<string, { schema: JsonSchema }> }>;
  security: unknown[];
}

interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, JsonSchema> };
}

const RUNS = Number(process.env.CONTRACT_RUNS ?? 25);
/** Long-lived answers: checked for their status and type, then let go. */
const STREAMING = new Set(['events']);
/** The nodes of the shipped default config's group, as the document's examples name them (src/http/examples.ts). */
const NODES = [
  { id: 'us-east-origin-4f2a1c', role: 'origin', region: 'us-east' },
  { id: 'us-east-edge-9c1d2e', role: 'edge', region: 'us-east' },
  { id: 'us-east-transcoder-7b3e01', role: 'transcoder', region: 'us-east' },
  { id: 'eu-west-origin-0d4c2b', role: 'origin', region: 'eu-west' },
  { id: 'eu-west-edge-5a6f7e', role: 'edge', region: 'eu-west' },
];

/** Plain JSON Schema with the document's $refs inlined, compiled. */
function checkerOf(doc: Document, schema: JsonSchema) {
  const inline = (s: unknown): unknown => {
    if (Array.isArray(s)) return s.map(inline);
    if (s === null || typeof s !== 'object') return s;
    const ref = (s as { $ref?: string }).$ref;
    if (ref) return inline(doc.components.schemas[ref.split('/').at(-1)!]);
    return Object.fromEntries(Object.entries(s).map(([k, v]) => [k, inline(v)]));
  };
  return Compile(inline(schema) as never);
}

async function setUp(compat: boolean): Promise<{ svc: TestService; tokens: Record<string, string | null>; doc: Document }> {
  const svc = await startTestService({
    groups: [staticGroup({ name: 'default', regions: ['us-east', 'eu-west'], nodes: NODES })],
    config: {
      defaultNodeGroup: 'default',
      auth: { users: [{ username: 'backend', role: 'app', passwordHash: hash('app-secret-password') }] },
      // Red5 SM2's paths beside ours (docs/migrating-from-red5-sm2.md): theirs held to the document too, ours unchanged.
      ...(compat ? { compat: { red5sm2: { enabled: true, anonymousLookups: true } } } : {}),
    },
  });
  const nodes = await allInService(
    svc,
    'default',
    NODES.map((n) => n.id),
  );
  const origin = (await svc.get('/as/v1/streams/live/cam1/publish')).json as { nodeId: string };
  await nodes.get(origin.nodeId)!.beat({ streams: [{ name: 'cam1', publishing: true }] });
  const app = ((await request(svc.url, 'POST', '/as/v1/auth/login', { username: 'backend', password: 'app-secret-password' })).json as { accessToken: string }).accessToken;
  const doc = (await svc.get('/as/v1/openapi.json', null)).json as Document;
  return { svc, doc, tokens: { admin: svc.adminToken, app, node: svc.signer.nodeToken('default', NODES[0]!.id, 3_600_000), none: null, garbage: 'not.a.token' } };
}

/** `arbitrary` `yes` times in `yes + no`, else null. */
const sometimes = <T>(arbitrary: fc.Arbitrary<T>, yes: number, no: number) => fc.oneof({ weight: yes, arbitrary }, { weight: no, arbitrary: fc.constant(null) });

/** Reads, then writes, then deletions: what the generated requests delete, later ones no longer find. */
const ORDER: Record<string, number> = { get: 0, post: 1, put: 2, delete: 3 };

for (const compat of [false, true])
  test(`every operation answers only what the document declares, with the declared type and shape${compat ? ' (with the Red5 SM2 layer on)' : ''}`, async (t) => {
    const { svc, doc, tokens } = await setUp(compat);
    t.teardown(() => svc.close());
    const operations = Object.entries(doc.paths)
      .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })))
      .sort((a, b) => ORDER[a.method]! - ORDER[b.method]!);
    t.true(operations.length >= (compat ? 45 : 25), `the document lists ${operations.length} operations`);
    const resolve = (ref: string) => doc.components.schemas[ref.split('/').at(-1)!]!;
    const seen = new Map<string, Set<number>>();

    for (const { path, method, op } of operations) {
      const params = op.parameters ?? [];
      const valueFor = (p: { name: string; schema: JsonSchema; example?: string }) =>
        fc.oneof(
          { weight: 3, arbitrary: arbitraryOf(p.schema, resolve).map(String) },
          // The document's own example: it names things that exist.
          { weight: 3, arbitrary: fc.constant(p.example ?? 'x') },
          // Anything at all, but not empty: an empty segment is another path, not this operation.
          { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 12 }) },
        );
      // Nor "." or "..": a URL's dot segments are resolved away before it is sent (a stream named "."
      // cannot be named in a path), so the request would be another path's.
      const segment = (p: Parameters<typeof valueFor>[0]) => valueFor(p).filter((v) => v !== '.' && v !== '..');
      const pathParams = fc.record(Object.fromEntries(params.filter((p) => p.in === 'path').map((p) => [p.name, segment(p)])));
      const query = fc
        .tuple(
          // Each parameter now and then: most requests should get past validation to the handler.
          fc
            .record(Object.fromEntries(params.filter((p) => p.in === 'query').map((p) => [p.name, sometimes(valueFor(p), 1, 2)])))
            .map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== null))),
          sometimes(fc.string({ minLength: 1, maxLength: 5 }), 1, 7),
        )
        .map(([known, unknown]) => (unknown === null ? known : { ...known, unknownParam: unknown }));
      const bodySpec = op.requestBody?.content['application/json'];
      t.true(!bodySpec || bodySpec.example !== undefined, `${op.operationId} has a request example`);
      const body = bodySpec
        ? fc.oneof(
            { weight: 3, arbitrary: fc.constant(bodySpec.example) },
            { weight: 3, arbitrary: arbitraryOf(bodySpec.schema, resolve) },
            { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
            { weight: 1, arbitrary: fc.constant('{"unterminated') },
          )
        : fc.constant(undefined);
      const token = fc.oneof({ weight: 3, arbitrary: fc.constant('admin') }, { weight: 2, arbitrary: fc.constantFrom('app', 'node') }, { weight: 1, arbitrary: fc.constantFrom('none', 'garbage') });
      await fc.assert(
        fc.asyncProperty(pathParams, query, body, token, async (pp, q, b, who) => {
          let url = path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent((pp as Record<string, string>)[name]!));
          const qs = new URLSearchParams(Object.entries(q as Record<string, string>)).toString();
          if (qs) url += `?${qs}`;
          const headers: Record<string, string> = {};
          if (tokens[who]) headers.authorization = `Bearer ${tokens[who]}`;
          if (STREAMING.has(op.operationId)) {
            const res = await fetch(svc.url + url, { headers, signal: AbortSignal.timeout(10_000) });
            const declared = op.responses[String(res.status)];
            await res.body?.cancel();
            if (!declared) throw new Error(`${method.toUpperCase()} ${url} (${who}): ${res.status} is not declared`);
            seen.set(op.operationId, (seen.get(op.operationId) ?? new Set()).add(res.status));
            return;
          }
          const r = await request(svc.url, method.toUpperCase(), url, b, headers);
          const declared = op.responses[String(r.status)];
          const where = `${method.toUpperCase()} ${url} (${who} token, body ${JSON.stringify(b)?.slice(0, 120)}): ${r.status} ${r.text.slice(0, 300)}`;
          if (!declared) throw new Error(`${where}\nstatus ${r.status} is not declared for ${op.operationId} (declared: ${Object.keys(op.responses).join(', ')})`);
          seen.set(op.operationId, (seen.get(op.operationId) ?? new Set()).add(r.status));
          if (!declared.content) return;
          const [type, { schema }] = Object.entries(declared.content)[0]!;
          const got = r.headers.get('content-type') ?? '';
          if (!got.startsWith(type)) throw new Error(`${where}\ncontent type ${got}, declared ${type}`);
          if (/json/.test(type)) {
            const checker = checkerOf(doc, schema);
            if (!checker.Check(r.json)) throw new Error(`${where}\nthe body does not match the declared schema: ${JSON.stringify([...checker.Errors(r.json)].slice(0, 3))}`);
          }
        }),
        { numRuns: RUNS, endOnFailure: true, includeErrorInReport: true },
      );
    }
    t.log([...seen].map(([id, s]) => `${id}: ${[...s].sort().join(' ')}`).join('\n'));
    // The generated requests reached past validation: some of every kind of answer came back.
    const statuses = new Set([...seen.values()].flatMap((s) => [...s]));
    for (const status of [200, 201, 400, 401, 403, 404]) t.true(statuses.has(status), `some operation answered ${status}`);
  });

test('an unknown query parameter is a 400 that names it, on routes with and without query parameters; a misspelt nodeGroup does not fall back to the default group', async (t) => {
  const svc = await startTestService({ groups: [staticGroup({ name: 'default', regions: ['us-east', 'eu-west'], nodes: NODES })], config: { defaultNodeGroup: 'default' } });
  t.teardown(() => svc.close());
  for (const path of ['/as/v1/streams/live/cam1/publish?nodegroup=other', '/as/v1/healthz?verbose=1', '/as/v1/nodegroups?limit=5&sort=name', '/as/v1/provision/default?x=']) {
    const r = await svc.get(path);
    t.is(r.status, 400, path);
    const name = [...new URL(path, svc.url).searchParams.keys()].find((k) => k !== 'limit')!;
    t.deepEqual(
      (r.json as { errors: Array<{ path: string }> }).errors.map((e) => e.path),
      [`query.${name}`],
      path,
    );
  }
  t.is((await svc.get('/as/v1/nodegroups?limit=1001')).status, 400, 'limit is at most 1000');
});
