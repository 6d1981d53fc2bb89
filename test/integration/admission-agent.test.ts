// The node agent's admission endpoints under hostile input (docs/security.md, "Who may publish and
// play"): nginx-rtmp's on_publish/on_play callbacks and the simulated node's sessions, fed fuzzed
// forms, tokens and headers over real HTTP. Nothing is admitted that should not be, nothing
// crashes, and a good token still works afterwards.
import test from 'ava';
import fc from 'fast-check';
import { AdmissionCallbacks } from '../../src/agent/admission/callbacks.js';
import { AdmissionGate } from '../../src/agent/admission/gate.js';
import { SimulatedBackend } from '../../src/agent/simulated.js';
import { AdmissionIssuer } from '../../src/admission/issuer.js';
import { NodeKeys } from '../../src/admission/node-keys.js';

const issuer = new AdmissionIssuer(new NodeKeys(Buffer.alloc(32, 3)), () => 0);
const RUNS = Number(process.env.FUZZ_RUNS ?? 300);

function gateFor(nodeId: string): AdmissionGate {
  const gate = new AdmissionGate('g', nodeId);
  gate.update({ required: true, keys: [issuer.keyOf('g', nodeId)], leewayMs: 0 }, undefined);
  return gate;
}

const tokenish = fc.oneof(
  fc.string({ maxLength: 300 }),
  fc.constant(issuer.client('g', 'other', 'publish', 'cam1', 60_000).token),
  fc.tuple(fc.base64String({ maxLength: 80 }), fc.base64String({ maxLength: 400 }), fc.base64String({ maxLength: 60 })).map((p) => p.join('.')),
  fc.constant('a'.repeat(5000)),
);

test('nginx-rtmp callbacks: fuzzed forms are refused without a crash; the right token still admits', async (t) => {
  const callbacks = new AdmissionCallbacks({ gate: gateFor('o1'), scope: 'live', log: () => {}, pullingFrom: () => '127.0.0.9:1935/live' });
  await callbacks.start();
  t.teardown(() => callbacks.stop());
  const post = async (path: string, body: string) =>
    (await fetch(`http://127.0.0.1:${callbacks.port}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status;
  await fc.assert(
    fc.asyncProperty(
      fc.constantFrom('/on_publish', '/on_play', '/other', '/on_publish?x=1'),
      fc.record({ app: fc.oneof(fc.constant('live'), fc.string({ maxLength: 20 })), name: fc.oneof(fc.constant('cam1'), fc.string({ maxLength: 200 })), token: tokenish, pageurl: tokenish }),
      fc.string({ maxLength: 200 }),
      async (path, form, junk) => {
        const status = await post(path, `${new URLSearchParams(form).toString()}&${junk}`);
        return status === 403 || status === 404 || status === 413;
      },
    ),
    { numRuns: RUNS },
  );
  t.is(await post('/on_publish', 'x'.repeat(20_000)), 413, 'a body past the bound');
  const good = issuer.client('g', 'o1', 'publish', 'cam1', 60_000).token;
  t.is(await post('/on_publish', new URLSearchParams({ app: 'live', name: 'cam1', token: good }).toString()), 200);
  t.is(await post('/on_play', new URLSearchParams({ app: 'live', name: 'cam1', token: good }).toString()), 403);
  t.is(await post('/on_play', new URLSearchParams({ app: 'live', name: 'cam1', pageurl: issuer.relay('g', 'o1', 'e1') }).toString()), 200, "a child's pull");
  t.is(await post('/on_publish', new URLSearchParams({ app: 'other', name: 'cam1', token: good }).toString()), 403, 'another application');
  // A pull from the parent enters as a local publish: admitted only from the parent's URL, and only as nginx writes it.
  const relayed = (over: Record<string, string>) => post('/on_publish', new URLSearchParams({ app: '', flashver: 'ngx-local-relay', addr: '127.0.0.9:1935/live', name: 'cam1', ...over }).toString());
  t.is(await relayed({}), 200);
  t.is(await relayed({ addr: '127.0.0.8:1935/live' }), 403, 'not the parent');
  t.is(await relayed({ app: 'live' }), 403, 'a client connection (it names the application) with no token');
  t.is(await relayed({ addr: '127.0.0.1' }), 403);
});

test('simulated node sessions: fuzzed tokens and headers are refused without a crash; the right token still opens a session', async (t) => {
  const node = new SimulatedBackend('origin', 'live', { address: '127.1.9.2', port: 0 }, gateFor('o1'));
  await node.start();
  t.teardown(() => node.stop());
  const base = `http://${node.address}:${node.port}`;
  await fc.assert(
    fc.asyncProperty(tokenish, fc.constantFrom('publish', 'subscribe'), fc.boolean(), async (token, kind, asHeader) => {
      const headers: Record<string, string> = {};
      let url = `${base}/live/cam1/${kind}`;
      if (asHeader) headers.authorization = `Bearer ${token.replace(/[\r\n]/g, '')}`;
      else url += `?token=${encodeURIComponent(token)}`;
      let status: number;
      try {
        status = (await fetch(url, { method: 'POST', headers })).status;
      } catch {
        return true; // a header value fetch itself refuses to send
      }
      return status === 403;
    }),
    { numRuns: RUNS },
  );
  const good = issuer.client('g', 'o1', 'publish', 'cam1', 60_000).token;
  t.is((await fetch(`${base}/live/cam1/publish`, { method: 'POST', headers: { authorization: `Bearer ${good}` } })).status, 201);
  t.is((await fetch(`${base}/live/cam1/subscribe?token=${good}`, { method: 'POST' })).status, 403, 'a publish token does not play');
});
