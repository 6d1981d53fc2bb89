// A Janus node's config folder (src/agent/webrtc/janus/config.ts), the namespace plan of a local
// Janus node (src/policy/network/netns-plan.ts), and the checks of the relay routes (relay.ts, forwards.ts).
import test from 'ava';
import fc from 'fast-check';
import { type ConfigError, loadConfig, parseConfig } from '../../src/config/load.js';
import { projectPath } from '../../src/paths.js';
import { localPlatformGroup } from '../helpers/fixtures.js';
import { JanusConfigError, janusPaths, renderJanusConfig, type JanusNode } from '../../src/agent/webrtc/janus/config.js';
import { Forwards, forwardStreams } from '../../src/agent/webrtc/janus/forwards.js';
import { parseRelayTarget, relayHostAllowed } from '../../src/agent/webrtc/janus/relay.js';
import { intToIp, ipToInt } from '../../src/policy/network/ipv4.js';
import { bridgeName, NETNS_PREFIX, NetnsPlanError, netnsPlan, parseSubnet } from '../../src/policy/network/netns-plan.js';

const octet = fc.integer({ min: 0, max: 255 });
const ip = (first: fc.Arbitrary<number>) => fc.tuple(first, octet, octet, fc.integer({ min: 1, max: 254 })).map((p) => p.join('.'));
const segment = fc.stringMatching(/^[A-Za-z0-9._-]{1,12}$/).filter((s) => s !== '.' && s !== '..');
const dir = fc.array(segment, { minLength: 1, maxLength: 4 }).map((parts) => `/${parts.join('/')}`);
const secret = fc.stringMatching(/^[A-Za-z0-9_-]{16,40}$/);

const node: fc.Arbitrary<JanusNode> = fc
  .record({
    nodeId: fc.stringMatching(/^[A-Za-z0-9._-]{1,32}$/),
    dir,
    media: ip(fc.integer({ min: 1, max: 126 })),
    control: fc.oneof(ip(fc.integer({ min: 1, max: 126 })), fc.constant('127.0.0.1')),
    publicAddress: fc.option(ip(fc.integer({ min: 1, max: 223 }))),
    stun: fc.option(fc.constantFrom('stun.example.org:3478', '192.0.2.10:19302')),
    secrets: fc.record({ api: secret, admin: secret, pluginKey: secret }),
    cert: fc.boolean(),
  })
  .map((r) => ({
    nodeId: r.nodeId,
    dir: r.dir,
    mediaAddress: r.media,
    controlAddress: r.control,
    wsPort: 8188,
    adminPort: 7088,
    icePorts: [20000, 29999] as const,
    mountpointPorts: [30000, 39999] as const,
    ...(r.publicAddress ? { publicAddress: r.publicAddress } : {}),
    ...(r.stun ? { stunServer: r.stun } : {}),
    secrets: r.secrets,
    libDir: '/usr/lib/x86_64-linux-gnu/janus',
    ...(r.cert ? { certificate: { pem: `${r.dir}/cert.pem`, key: `${r.dir}/key.pem` } } : {}),
  }));

/** `key = value` lines of a section of a rendered file. */
function section(text: string, name: string): Record<string, string> {
  const m = new RegExp(`^${name}: \\{\\n([\\s\\S]*?)\\n\\}`, 'm').exec(text);
  if (!m) return {};
  return Object.fromEntries(m[1]!.split('\n').map((l) => l.trim().split(' = ') as [string, string]));
}

test('a rendered config loads the VideoRoom and Streaming plugins only, listens where told, and keeps its files in the node folder', (t) => {
  fc.assert(
    fc.property(node, (n) => {
      const files = renderJanusConfig(n);
      t.deepEqual(Object.keys(files).sort(), ['janus.jcfg', 'janus.plugin.streaming.jcfg', 'janus.plugin.videoroom.jcfg', 'janus.transport.http.jcfg', 'janus.transport.websockets.jcfg']);
      const main = files['janus.jcfg']!;
      const general = section(main, 'general');
      t.is(general.configs_folder, `"${janusPaths(n.dir).conf}"`);
      t.is(general.log_to_file, `"${janusPaths(n.dir).log}"`);
      t.is(general.interface, `"${n.mediaAddress}"`);
      t.is(general.api_secret, `"${n.secrets.api}"`);
      t.is(general.admin_secret, `"${n.secrets.admin}"`);
      const disabled = section(main, 'plugins').disable!.replaceAll('"', '').split(',');
      for (const p of ['audiobridge', 'echotest', 'recordplay', 'sip', 'textroom', 'videocall', 'voicemail']) t.true(disabled.includes(`libjanus_${p}.so`));
      t.false(disabled.some((p) => /videoroom|streaming/.test(p)));
      // ICE only on the media address; a NAT mapping and STUN only when given.
      const nat = section(main, 'nat');
      t.is(nat.ice_enforce_list, `"${n.mediaAddress}"`);
      t.is(nat.ice_keepalive_conncheck, 'true');
      t.is(nat.nat_1_1_mapping, n.publicAddress ? `"${n.publicAddress}"` : undefined);
      t.is(nat.stun_server, n.stunServer ? `"${n.stunServer.split(':')[0]}"` : undefined);
      t.is(section(main, 'media').rtp_port_range, '"20000-29999"');
      t.is(section(main, 'certificates').cert_pem, n.certificate ? `"${n.certificate.pem}"` : undefined);
      const ws = section(files['janus.transport.websockets.jcfg']!, 'general');
      t.is(ws.ws_ip, `"${n.controlAddress}"`);
      t.is(ws.ws_port, '8188');
      t.is(section(files['janus.transport.websockets.jcfg']!, 'admin').admin_ws, 'false');
      const admin = section(files['janus.transport.http.jcfg']!, 'admin');
      t.is(admin.admin_ip, `"${n.controlAddress}"`);
      t.is(section(files['janus.transport.http.jcfg']!, 'general').http, 'false', 'the Janus API over HTTP stays off');
      for (const plugin of ['janus.plugin.videoroom.jcfg', 'janus.plugin.streaming.jcfg']) t.is(section(files[plugin]!, 'general').admin_key, `"${n.secrets.pluginKey}"`);
      t.is(section(files['janus.plugin.videoroom.jcfg']!, 'general').lock_rtp_forward, 'true');
      t.is(section(files['janus.plugin.streaming.jcfg']!, 'general').rtp_port_range, '"30000-39999"');
      // Every path Janus writes or reads of its own is under the node’s folder (the admin API’s URL path aside).
      for (const text of Object.values(files)) {
        for (const [, p] of text.matchAll(/"(\/[^"]*)"/g)) t.true(p === '/admin' || p!.startsWith(`${n.dir}/`) || p!.startsWith('/usr/lib/'), p);
      }
    }),
  );
});

test('a config that Janus would misread is refused before it is written', (t) => {
  const base = fc.sample(node, { numRuns: 1, seed: 1 })[0]!;
  const bad: Array<[string, Partial<JanusNode>]> = [
    ['a loopback media address (Janus gathers no candidates there)', { mediaAddress: '127.0.0.2' }],
    ['a media address that is not one', { mediaAddress: 'eth0' }],
    ['a quote in a path', { dir: '/tmp/a"b' }],
    ['a relative path', { dir: 'tmp/x' }],
    ['a short secret', { secrets: { ...base.secrets, api: 'short' } }],
    ['a secret with a quote', { secrets: { ...base.secrets, admin: 'aaaaaaaaaaaaaaaaaaaa"' } }],
    ['ICE ports over the API port', { icePorts: [8000, 9000] }],
    ['overlapping port ranges', { icePorts: [20000, 30000], mountpointPorts: [30000, 31000] }],
    ['an empty range', { mountpointPorts: [31000, 31000] }],
    ['one port for both APIs', { adminPort: 8188 }],
    ['a STUN server without a port', { stunServer: 'stun.example.org' }],
  ];
  for (const [what, change] of bad) t.throws(() => renderJanusConfig({ ...base, ...change }), { instanceOf: JanusConfigError }, what);
});

test('namespace plans: names start with sy and fit an interface name, come from the node id alone, and addresses stay in the subnet off its reserved ends', (t) => {
  const subnet = fc.constantFrom('10.213.0.0/16', '10.88.0.0/16', '10.213.4.0/24', '172.20.0.0/20');
  fc.assert(
    fc.property(fc.stringMatching(/^[a-z0-9-]{1,40}$/), ip(fc.constant(127)), subnet, (id, loopback, net) => {
      let plan: ReturnType<typeof netnsPlan>;
      try {
        plan = netnsPlan(id, loopback, net);
      } catch (err) {
        t.true(err instanceof NetnsPlanError);
        return;
      }
      for (const name of [plan.namespace, plan.hostLink, plan.nodeLink, plan.bridge]) {
        t.true(name.startsWith(NETNS_PREFIX), name);
        t.true(name.length <= 15, name);
        t.regex(name, /^[a-z0-9-]+$/);
      }
      t.is(plan.bridge, bridgeName(net));
      t.deepEqual(netnsPlan(id, '127.9.9.9', net).namespace, plan.namespace, 'a new start of the node finds what a killed one left');
      const { base, prefix } = parseSubnet(net);
      const host = ipToInt(plan.address) - base;
      t.true(host >= 2 && host < 2 ** (32 - prefix) - 1);
      t.is(plan.bridgeAddress, intToIp(base + 1));
      t.is(plan.prefix, prefix);
    }),
  );
  // Distinct loopback addresses of one platform (counted up from firstAddress) get distinct node addresses.
  const addresses = new Set(Array.from({ length: 300 }, (_, i) => netnsPlan(`n${i}`, intToIp(ipToInt('127.5.0.2') + i), '10.213.0.0/16').address));
  t.is(addresses.size, 300);
  t.not(netnsPlan('a', '127.0.0.2', '10.213.0.0/16').namespace, netnsPlan('b', '127.0.0.2', '10.213.0.0/16').namespace);
});

test('namespace plans refuse subnets and addresses they cannot use', (t) => {
  for (const s of ['10.213.0.0', '10.213.0.1/16', '10.213.0.0/30', '10.213.0.0/4', 'x/16', '300.1.0.0/16']) t.throws(() => parseSubnet(s), { instanceOf: NetnsPlanError }, s);
  t.throws(() => netnsPlan('n', '127.0.0.1', '10.213.0.0/16'), { instanceOf: NetnsPlanError, message: /reserves/ });
  t.throws(() => netnsPlan('n', '127.0.255.255', '10.213.0.0/16'), { instanceOf: NetnsPlanError, message: /reserves/ });
  t.is(netnsPlan('n', '127.0.0.2', '10.213.0.0/16').address, '10.213.0.2');
  t.is(netnsPlan('n', '127.5.1.7', '10.213.0.0/16').address, '10.213.1.7');
});

test('relay routes: a parent forwards only to the asking node or an address of the nodes’ segment', (t) => {
  const subnet = parseSubnet('10.213.0.0/16');
  t.true(relayHostAllowed('10.213.0.7', '127.0.0.1', subnet));
  t.true(relayHostAllowed('192.0.2.4', '::ffff:192.0.2.4', null), 'the asking agent’s own address, on a real host');
  for (const host of ['10.213.0.0', '10.213.0.1', '10.213.255.255', '10.214.0.5', '8.8.8.8', 'example.org', '']) t.false(relayHostAllowed(host, '127.0.0.1', subnet), host);
  t.false(relayHostAllowed('192.0.2.5', '192.0.2.4', null));
  fc.assert(
    fc.property(fc.anything(), (body) => {
      const parsed = parseRelayTarget(body);
      if (typeof parsed === 'string') return;
      t.true(parsed.media.length >= 1 && parsed.media.length <= 2);
    }),
  );
  t.deepEqual(parseRelayTarget({ host: '10.213.0.3', media: [{ kind: 'video', port: 30002, rtcpPort: 30003, pt: 120, extra: 1 }] }), {
    host: '10.213.0.3',
    media: [{ kind: 'video', port: 30002, rtcpPort: 30003, pt: 120 }],
  });
  t.regex(
    parseRelayTarget({
      host: '10.213.0.3',
      media: [
        { kind: 'video', port: 1, rtcpPort: 2, pt: 96 },
        { kind: 'video', port: 3, rtcpPort: 4, pt: 97 },
      ],
    }) as string,
    /twice/,
  );
  t.regex(parseRelayTarget({ host: '10.213.0.3', media: [{ kind: 'data', port: 1, rtcpPort: 2, pt: 96 }] }) as string, /kind/);
  for (const pt of [undefined, 0, 72, 95, 128, 96.5])
    t.regex(parseRelayTarget({ host: '10.213.0.3', media: [{ kind: 'video', port: 1, rtcpPort: 2, pt }] }) as string, /dynamic payload type/, String(pt));
});

test('a forward sends each medium a publisher has to the mountpoint port of its kind, renumbered to the payload type the mountpoint expects', (t) => {
  let n = 0;
  const ssrc = () => ++n;
  const target = {
    host: '10.213.0.3',
    media: [
      { kind: 'video' as const, port: 30002, rtcpPort: 30003, pt: 98 },
      { kind: 'audio' as const, port: 30000, rtcpPort: 30001, pt: 96 },
    ],
  };
  t.deepEqual(
    forwardStreams(
      [
        { kind: 'audio', mid: '0' },
        { kind: 'video', mid: '1' },
      ],
      target,
      ssrc,
    ),
    [
      { mid: '0', port: 30000, rtcpPort: 30001, pt: 96, ssrc: 1 },
      { mid: '1', port: 30002, rtcpPort: 30003, pt: 98, ssrc: 2 },
    ],
  );
  t.deepEqual(forwardStreams([{ kind: 'video', mid: '0' }], { host: 'x', media: [target.media[1]!] }, ssrc), [], 'no port for the kind: nothing');
});

test('a local group on janus: origins serve WHIP and WHEP, edges WHEP, relays nothing; its subnet and first address are checked at load', (t) => {
  const group = (local: object, roles: object = { origin: {}, edge: { parentRole: 'origin' } }) => ({
    nodeGroups: [localPlatformGroup({ roles, rules: [] }, { backend: 'janus', port: 18088, ...local })],
  });
  const g = parseConfig(group({}), 'test').nodeGroups[0]!;
  t.deepEqual(g.platform.local.janus, { subnet: '10.213.0.0/16' });
  t.deepEqual(g.roles.origin?.serves, ['whip', 'whep']);
  t.deepEqual(g.roles.edge?.serves, ['whep']);
  const shipped = loadConfig({ SWITCHYARD_CONFIG: projectPath('config', 'examples', 'webrtc-janus.json') });
  t.like(shipped.nodeGroups[0]!.platform.local, { backend: 'janus', janus: { subnet: '10.213.0.0/16' } });
  const problems = (raw: unknown) => {
    try {
      parseConfig(raw, 'test');
      return [];
    } catch (err) {
      return (err as ConfigError).problems;
    }
  };
  t.regex(problems(group({ janus: { subnet: '10.213.0.0/30' } })).join('\n'), /platform\.local\.janus\.subnet.*prefix must be 8 to 24 bits/);
  t.regex(problems(group({ janus: { subnet: '10.213.0.7/16' } })).join('\n'), /platform\.local\.janus\.subnet.*host bits are set/);
  t.regex(problems(group({ firstAddress: '127.0.0.1' })).join('\n'), /platform\.local\.firstAddress.*reserves/);
  t.regex(problems(group({}, { origin: {}, relay: { parentRole: 'origin', serves: ['whep'] } })).join('\n'), /roles\.relay\.serves\[0\].*janus relays serve nothing a client takes, not whep/);
});

test('forward leases: renewed ones live on, the others end after their lease; this node’s own never do; children are listed per stream', async (t) => {
  let now = 1_000_000;
  const logs: string[] = [];
  const forwards = new Forwards({ gateway: () => null, log: (m) => logs.push(m), now: () => now, leaseMs: 30_000 });
  forwards.publisherJoined('cam', { room: 1, feed: 1, media: [{ kind: 'video', mid: '0' }] });
  t.true(forwards.hasPublisher('cam'));
  const target = (host: string) => ({ host, media: [{ kind: 'video' as const, port: 30000, rtcpPort: 30001, pt: 96 }] });
  const own = await forwards.add('cam', target('10.213.0.2'), { lease: false });
  const kept = await forwards.add('cam', target('10.213.0.3'), { lease: true, by: 'edge-1' });
  const lapsed = await forwards.add('cam', target('10.213.0.4'), { lease: true });
  t.deepEqual([...forwards.children()], [['cam', new Set(['edge-1', '10.213.0.4'])]]);
  now += 20_000;
  t.true(forwards.renew('cam', kept));
  t.false(forwards.renew('other', kept), 'a forward is renewed under its own stream only');
  t.false(forwards.renew('cam', 'no-such'));
  now += 15_000;
  await forwards.expire();
  t.deepEqual([...forwards.children()], [['cam', new Set(['edge-1'])]]);
  t.true(logs.includes('forward lease ended'));
  now += 60_000;
  await forwards.expire();
  t.deepEqual([...forwards.children()], []);
  t.true(await forwards.remove('cam', own), 'this node’s own forward outlived every lease');
  t.false(await forwards.remove('cam', lapsed));
  forwards.publisherDown('cam');
  t.false(forwards.hasPublisher('cam'));
});
