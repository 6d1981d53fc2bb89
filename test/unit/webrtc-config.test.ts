// What a group's roles serve (docs/webrtc.md, "What a group serves"): the local backend's
// protocols by default, never more, and never contradicted by a listener the role configures;
// the shipped WebRTC example loads and runs werift nodes.
import test from 'ava';
import { localPlatformGroup, staticGroup } from '../helpers/fixtures.js';
import { DEFAULT_CONFIG_FILE, type ConfigError, loadConfig, parseConfig } from '../../src/config/load.js';

const local = (local: object, roles: object) => ({ nodeGroups: [localPlatformGroup({ roles, rules: [] }, local)] });
const problemsOf = (raw: unknown): string[] => {
  try {
    parseConfig(raw, 'test');
    return [];
  } catch (err) {
    return (err as ConfigError).problems;
  }
};

test('werift nodes serve WHIP on origins and WHEP on origins and edges unless a role says less; nginx-rtmp nodes serve RTMP', (t) => {
  const rtc = parseConfig(local({ backend: 'werift', port: 0 }, { origin: {}, edge: { parentRole: 'origin' } }), 'test').nodeGroups[0]!;
  t.deepEqual(rtc.roles.origin!.serves, ['whip', 'whep']);
  t.deepEqual(rtc.roles.edge!.serves, ['whep']);
  const less = parseConfig(local({ backend: 'werift' }, { origin: { serves: ['whip'] }, edge: { parentRole: 'origin' } }), 'test').nodeGroups[0]!;
  t.deepEqual(less.roles.origin!.serves, ['whip']);
  const rtmp = parseConfig(local({ backend: 'nginx-rtmp', port: 1935 }, { origin: {}, edge: { parentRole: 'origin' } }), 'test').nodeGroups[0]!;
  t.deepEqual(rtmp.roles.edge!.serves, ['rtmp']);
  t.is(parseConfig(local({}, { origin: {} }), 'test').nodeGroups[0]!.roles.origin!.serves, undefined, 'simulated nodes declare nothing');
  t.is(parseConfig({ nodeGroups: [staticGroup()] }, 'test').nodeGroups[0]!.roles.origin!.serves, undefined, 'a static fleet declares what it serves, or nothing');
});

test('a role cannot declare what its backend does not serve, a protocol for another role, or a listener it does not serve', (t) => {
  t.deepEqual(problemsOf(local({ backend: 'werift' }, { origin: {}, edge: { parentRole: 'origin', serves: ['whip'] } })), [
    'nodeGroups[0].roles.edge.serves[0] = "whip": werift edges serve whep, not whip',
    'nodeGroups[0].roles.edge.serves[0] = "whip": whip is for origin and transcoder roles',
  ]);
  t.deepEqual(problemsOf(local({ backend: 'werift' }, { origin: { serves: ['rtmp'] } })), ['nodeGroups[0].roles.origin.serves[0] = "rtmp": werift origins serve whip and whep, not rtmp']);
  t.deepEqual(problemsOf(local({ backend: 'werift' }, { origin: { subscribe: { protocol: 'rtmp', port: 1935 } } })), [
    'nodeGroups[0].roles.origin.subscribe.protocol = "rtmp": rtmp is not among what the role serves (whip, whep)',
  ]);
  t.deepEqual(problemsOf({ nodeGroups: [{ ...local({ backend: 'werift' }, { origin: {}, transcoder: {} }).nodeGroups[0], rules: [{ region: 'r1', role: 'transcoder', min: 0, max: 2 }] }] }), [
    'nodeGroups[0].rules[0].max = 2: werift transcoders serve nothing a client takes (docs/webrtc.md): must be 0',
  ]);
  t.is(problemsOf(local({}, { origin: { serves: ['whip', 'whip'] } })).length, 1, 'no protocol twice');
  t.is(problemsOf(local({}, { origin: { serves: ['wss'] } })).length, 1, 'only rtmp, whip and whep');
});

test('config/examples/webrtc.json is a ready group of werift nodes, origin and edge', (t) => {
  const config = loadConfig({ SWITCHYARD_CONFIG: DEFAULT_CONFIG_FILE.replace(/default\.json$/, 'examples/webrtc.json') });
  const g = config.nodeGroups.find((n) => n.name === config.defaultNodeGroup)!;
  t.like(g.platform, { type: 'local', local: { backend: 'werift' } });
  t.deepEqual(g.roles.origin!.serves, ['whip', 'whep']);
  t.deepEqual(g.roles.edge!.serves, ['whep']);
  t.true(g.rules.some((r) => r.role === 'origin' && r.min >= 1));
  t.true(g.rules.some((r) => r.role === 'edge' && r.min >= 1));
});
