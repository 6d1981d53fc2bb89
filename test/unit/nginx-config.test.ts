import test from 'ava';
import fc from 'fast-check';
import { NginxConfigError, nodePaths, PULL_FLASHVER_PREFIX, renderNginxConfig, type NginxNode } from '../../src/agent/media/nginx-config.js';
import { ROLES } from '../../src/domain/vocabulary.js';

const octet = fc.integer({ min: 0, max: 255 });
const loopback = fc.tuple(octet, octet, fc.integer({ min: 1, max: 254 })).map(([a, b, c]) => `127.${a}.${b}.${c}`);
const segment = fc.stringMatching(/^[A-Za-z0-9._-]{1,12}$/).filter((s) => s !== '.' && s !== '..');
const dir = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => `/${parts.join('/')}`);
const ports = fc.uniqueArray(fc.integer({ min: 1, max: 65535 }), { minLength: 3, maxLength: 3 });

const node: fc.Arbitrary<NginxNode> = fc
  .record({
    nodeId: fc.stringMatching(/^[A-Za-z0-9._-]{1,32}$/),
    role: fc.constantFrom(...ROLES),
    scope: fc.stringMatching(/^[A-Za-z0-9._-]{1,16}$/),
    address: loopback,
    ports,
    dir,
    parent: fc.option(loopback),
    user: fc.option(fc.constantFrom('root', 'media', 'www-data')),
  })
  .map((r) => ({
    nodeId: r.nodeId,
    role: r.role,
    scope: r.scope,
    address: r.address,
    rtmpPort: r.ports[0]!,
    statPort: r.ports[1]!,
    dir: r.dir,
    modulePath: '/usr/lib/nginx/modules/ngx_rtmp_module.so',
    parent: r.parent === null ? null : { address: r.parent, port: r.ports[2]! },
    ...(r.user === null ? {} : { user: r.user }),
  }));

const lines = (text: string, re: RegExp) =>
  text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => re.test(l));

test('every rendered config loads the module, stays in the foreground with one worker, and keeps its files in the node directory', (t) => {
  fc.assert(
    fc.property(node, (n) => {
      const conf = renderNginxConfig(n);
      const body = conf.split('\n').filter((l) => !l.trim().startsWith('#'));
      t.is(body[0], `load_module "${n.modulePath}";`);
      t.is(lines(conf, /^daemon off;$/).length, 1);
      t.is(lines(conf, /^worker_processes 1;$/).length, 1);
      t.deepEqual(lines(conf, /^worker_processes/), ['worker_processes 1;']);
      t.is(lines(conf, /^user /).length, n.user ? 1 : 0);
      // Every file nginx writes is under the node's own directory, never a shared default.
      const paths = [...conf.matchAll(/"([^"]+)"/g)].map((m) => m[1]!).filter((p) => p !== n.modulePath);
      t.true(paths.length >= 8);
      for (const p of paths) t.true(p.startsWith(`${n.dir}/`), p);
      for (const directive of ['pid', 'error_log', 'access_log', 'client_body_temp_path']) t.is(lines(conf, new RegExp(`^${directive} "`)).length, 1, directive);
      t.is(lines(conf, /^access_log off;$/).length, 1, 'no HTTP access log at all');
      t.true(conf.includes(`pid "${nodePaths(n.dir).pid}";`));
      // Listeners on the node's own address only.
      t.deepEqual(lines(conf, /^listen /), [`listen ${n.address}:${n.rtmpPort};`, `listen ${n.address}:${n.statPort};`]);
      t.true(conf.includes(`application ${n.scope} {`));
      t.true(conf.includes('rtmp_stat all;'));
      t.is([...conf].filter((c) => c === '{').length, [...conf].filter((c) => c === '}').length);
    }),
    { numRuns: 300 },
  );
});

test('only an edge or a relay with a parent pulls, from that parent, saying who it is', (t) => {
  fc.assert(
    fc.property(node, (n) => {
      const conf = renderNginxConfig(n);
      const pulls = lines(conf, /^pull /);
      const pulling = (n.role === 'edge' || n.role === 'relay') && n.parent !== null;
      t.is(pulls.length, pulling ? 1 : 0);
      if (pulling) t.is(pulls[0], `pull rtmp://${n.parent!.address}:${n.parent!.port}/${n.scope} flashVer=${PULL_FLASHVER_PREFIX}${n.nodeId};`);
      t.is(lines(conf, /^deny publish all;$/).length, n.role === 'edge' || n.role === 'relay' ? 1 : 0, 'edges and relays refuse publishers');
      const execs = lines(conf, /^exec /);
      t.deepEqual(execs, n.role === 'transcoder' ? [`exec /bin/sh "${nodePaths(n.dir).transcodeScript}" $name;`] : []);
      t.is(lines(conf, /^drop_idle_publisher /).length, n.role === 'origin' || n.role === 'transcoder' ? 1 : 0);
    }),
    { numRuns: 300 },
  );
});

test('an IPv6 address is bracketed in listen and pull', (t) => {
  const conf = renderNginxConfig({
    nodeId: 'e1',
    role: 'edge',
    scope: 'live',
    address: '::1',
    rtmpPort: 1935,
    statPort: 8080,
    dir: '/n',
    modulePath: '/m.so',
    parent: { address: 'fd00::2', port: 1935 },
  });
  t.true(conf.includes('listen [::1]:1935;'));
  t.true(conf.includes('pull rtmp://[fd00::2]:1935/live flashVer=switchyard/pull/e1;'));
});

test('values that could break out of the config are refused', (t) => {
  const ok: NginxNode = { nodeId: 'o1', role: 'origin', scope: 'live', address: '127.0.0.2', rtmpPort: 1935, statPort: 8080, dir: '/data/nodes/o1', modulePath: '/m.so', parent: null };
  t.notThrows(() => renderNginxConfig(ok));
  const bad: Array<Partial<NginxNode>> = [
    { address: '127.0.0.2; include /etc/passwd' },
    { address: '' },
    { rtmpPort: 0 },
    { statPort: 70000 },
    { statPort: 1935 },
    { dir: '/data/"x' },
    { dir: '/data/$name' },
    { dir: 'relative/dir' },
    { dir: '/data/x;y' },
    { dir: '/data/x\ny' },
    { scope: 'live { }' },
    { nodeId: 'a b' },
    { user: 'root; daemon on' },
    { role: 'edge', parent: { address: 'x y', port: 1935 } },
    { role: 'edge', parent: { address: '127.0.0.3', port: 0 } },
    { role: 'edge', parent: { address: '127.0.0.3', port: 1935, credential: 'a b' } },
    { role: 'edge', parent: { address: '127.0.0.3', port: 1935, credential: 'x;include /etc/passwd' } },
    { role: 'edge', parent: { address: '127.0.0.3', port: 1935, credential: '' } },
    { admissionPort: 0 },
    { admissionPort: 65536 },
  ];
  for (const b of bad) t.throws(() => renderNginxConfig({ ...ok, ...b }), { instanceOf: NginxConfigError }, JSON.stringify(b));
});

test('admission (docs/security.md): every publish and play asks the agent on 127.0.0.1, a pull presents its credential, and the control module answers this machine only', (t) => {
  fc.assert(
    fc.property(node, fc.integer({ min: 1, max: 65535 }), fc.stringMatching(/^[A-Za-z0-9_-]{1,40}\.[A-Za-z0-9_-]{1,80}\.[A-Za-z0-9_-]{1,43}$/), (n, port, credential) => {
      const conf = renderNginxConfig({ ...n, admissionPort: port, parent: n.parent ? { ...n.parent, credential } : null });
      t.deepEqual(lines(conf, /^on_(publish|play) /), [`on_publish http://127.0.0.1:${port}/on_publish;`, `on_play http://127.0.0.1:${port}/on_play;`]);
      t.deepEqual(lines(conf, /^notify_method /), ['notify_method post;']);
      const pulls = lines(conf, /^pull /);
      if (pulls.length > 0) t.true(pulls[0]!.endsWith(` pageUrl=${credential};`));
      t.deepEqual(lines(conf, /^(allow|deny) (?!publish)/), ['allow 127.0.0.1;', ...(n.address !== '127.0.0.1' ? [`allow ${n.address};`] : []), 'deny all;']);
      t.is(lines(conf, /^rtmp_control all;$/).length, 1);
      t.is(lines(renderNginxConfig(n), /^on_publish /).length, 0, 'without an admission port, no callbacks');
    }),
    { numRuns: 200 },
  );
});
