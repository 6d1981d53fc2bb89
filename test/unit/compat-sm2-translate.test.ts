// SM2's bodies onto ours and back (docs/migrating-from-red5-sm2.md): provisions and node group
// configs as SM2's clients write them, checked by our own rules, and read back as they were.
import test from 'ava';
import fc from 'fast-check';
import { loadConfig } from '../../src/config/load.js';
import { normalizeNodeGroup } from '../../src/config/node-group.js';
import { toOurs as groupToOurs, toSm2 as groupToSm2, type NodeGroupConfig } from '../../src/compat/red5sm2/nodegroup-config.js';
import { DEFAULT_AUDIO_BR, DEFAULT_FPS, toOurs as provisionsToOurs, toSm2 as provisionToSm2, type ProvisionRequest } from '../../src/compat/red5sm2/provisions.js';

const variant = (guid: string, level: number, spelling: 'videoBitRate' | 'videoBitrate' = 'videoBitRate') => ({
  streamGuid: `${guid}_${level}`,
  abrLevel: level,
  videoParams: { videoWidth: 1280 / 2 ** (level - 1), videoHeight: 720 / 2 ** (level - 1), [spelling]: 2_000_000 / level },
});

test('provisions: the guid in provisionGuid (HTML5) or streamGuid (Android, iOS), bitrates in either spelling, defaults for what SM2 does not say', (t) => {
  const requests = [
    { provisionGuid: 'live/show', messageType: 'ProvisionCommand', streams: [variant('live/show', 1), variant('live/show', 2, 'videoBitrate')] },
    { streamGuid: 'live/room1/talk', credentials: { username: 'u', password: 'p' }, region: 'r2', streams: [variant('live/room1/talk', 1)] },
  ] as ProvisionRequest[];
  const r = provisionsToOurs(requests, 'live', 'r1');
  if (!r.ok) return t.fail(JSON.stringify(r.errors));
  t.deepEqual(r.provisions, [
    {
      streamName: 'show',
      region: 'r1',
      streams: [
        { name: 'show_1', level: 1, videoBR: 2_000_000, videoWidth: 1280, videoHeight: 720, videoFPS: DEFAULT_FPS, audioBR: DEFAULT_AUDIO_BR },
        { name: 'show_2', level: 2, videoBR: 1_000_000, videoWidth: 640, videoHeight: 360, videoFPS: DEFAULT_FPS, audioBR: DEFAULT_AUDIO_BR },
      ],
    },
    { streamName: 'room1~talk', region: 'r2', streams: [{ name: 'room1~talk_1', level: 1, videoBR: 2_000_000, videoWidth: 1280, videoHeight: 720, videoFPS: DEFAULT_FPS, audioBR: DEFAULT_AUDIO_BR }] },
  ]);
  // Nothing of the credentials is kept.
  t.false(JSON.stringify(r.provisions).includes('"p"'));
});

test("provisions: every problem is named where SM2's body has it", (t) => {
  const paths = (requests: unknown[]) => {
    const r = provisionsToOurs(requests as ProvisionRequest[], 'live', 'r1');
    return r.ok ? [] : r.errors.map((e) => e.path);
  };
  t.deepEqual(paths([{ streams: [variant('live/a', 1)] }]), ['body[0].provisionGuid']);
  t.deepEqual(paths([{ provisionGuid: 'vod/a', streams: [variant('live/a', 1)] }]), ['body[0].provisionGuid']);
  t.deepEqual(paths([{ provisionGuid: 'live/a', streamGuid: 'live/b', streams: [variant('live/a', 1)] }]), ['body[0].streamGuid']);
  t.deepEqual(paths([{ provisionGuid: 'live/a', capabilities: ['PUBLISH'], streams: [variant('live/a', 1)] }]), ['body[0].capabilities']);
  t.deepEqual(paths([{ provisionGuid: 'live/a', streams: [{ streamGuid: 'other/a_1', abrLevel: 1, videoParams: { videoWidth: 640, videoHeight: 360, videoBitRate: 1e6 } }] }]), [
    'body[0].streams[0].streamGuid',
  ]);
  t.deepEqual(paths([{ provisionGuid: 'live/a', streams: [{ streamGuid: 'live/a_1', abrLevel: 1, videoParams: { videoWidth: 640, videoHeight: 360 } }] }]), [
    'body[0].streams[0].videoParams.videoBitRate',
  ]);
  t.deepEqual(
    paths([
      { provisionGuid: 'live/a', streams: [variant('live/a', 1)] },
      { streamGuid: 'live/a', streams: [variant('live/a', 2)] },
    ]),
    ['body[1].provisionGuid'],
  );
});

test('provisions: what SM2 posts reads back the same', (t) => {
  const segment = fc.stringMatching(/^[a-z][a-z0-9_-]{0,10}$/);
  fc.assert(
    fc.property(segment, fc.option(segment, { nil: undefined }), fc.uniqueArray(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 16 }), (name, room, levels) => {
      const guid = room ? `live/${room}/${name}` : `live/${name}`;
      const request = { provisionGuid: guid, streams: levels.map((l) => ({ streamGuid: `${guid}_${l}`, abrLevel: l, videoParams: { videoWidth: 640, videoHeight: 360, videoBitRate: 1000 + l } })) };
      const r = provisionsToOurs([request], 'live', 'r1');
      if (!r.ok) return false;
      const p = r.provisions[0]!;
      const back = provisionToSm2({ ...p, createdAt: 0, updatedAt: 0 }, 'live');
      t.deepEqual(back, { ...request, region: 'r1' });
      return true;
    }),
  );
});

/** A node group as SM2's Terraform installer writes one (r5p_create_node_group.sh): strings for min and max, its expression fields, cloud fields. */
const installerConfig = (name: string): NodeGroupConfig => {
  const rule = (role: string, min: string, max: string, limit: string, rank = 'cpu.usage') => ({
    nodeGroupName: name,
    subGroupName: 'us-east-1',
    nodeRoleName: role,
    min,
    max,
    increment: 1,
    outExpression: role === 'relay' ? 'avg(connections.clusterchildren) > 8' : 'avg(cpu.usage) > 55.0',
    inExpression: role === 'relay' ? 'avg(connections.clusterchildren) < 2' : 'avg(cpu.usage) < 20.0',
    capacityRankingExpression: rank,
    capacityLimitExpression: limit,
  });
  return {
    name,
    description: 'Stream Manager 2.0 Node group with Origin, Edge, Relay in AWS cloud platform',
    cloudProperties: 'environment=test;vpc=vpc-1;security_group=sg-1',
    cloudPlatform: 'AWS',
    isScalingPaused: false,
    internalVersionCount: 0,
    shuffleSizeExpression: 'nodeCount*0.5',
    images: { origin_image: { name: 'origin_image', image: 'ami-1', cloudProperties: 'instance_type=c5.large;volume_size=16' } },
    roles: {
      origin: { name: 'origin', imageName: 'origin_image', capabilities: ['PUBLISH'], propertyOverrides: [] },
      relay: { name: 'relay', imageName: 'origin_image', parentRoleName: 'origin', parentCardinality: 'GLOBAL', capabilities: [], propertyOverrides: [] },
      edge: {
        name: 'edge',
        imageName: 'origin_image',
        parentRoleName: 'relay',
        parentCardinality: 'AUTOGROUP',
        capabilities: ['SUBSCRIBE'],
        propertyOverrides: [{ fileName: 'webapps/live/WEB-INF/red5-web.properties', properties: { 'webhooks.endpoint': 'https://hooks.example' } }],
      },
    },
    groups: {
      'us-east-1': {
        nodeGroupName: name,
        subGroupName: 'us-east-1',
        groupType: 'main',
        cloudProperties: 'region=us-east-1',
        rulesByRole: { origin: rule('origin', '1', '20', '90.0'), edge: rule('edge', '1', '40', '90.0'), relay: rule('relay', '0', '20', '0', '0') },
      },
    },
  };
};

test("node groups: the Terraform installer's NodeGroupConfig is a valid group of ours, on the configured platform", (t) => {
  const r = groupToOurs(installerConfig('ng-oer'), { type: 'local', local: { firstAddress: '127.0.9.2' } });
  if (!r.ok) return t.fail(JSON.stringify(r.errors));
  const normalized = normalizeNodeGroup(r.translation.spec);
  if ('errors' in normalized) return t.fail(JSON.stringify(normalized.errors));
  const g = normalized.group;
  t.is(g.platform.type, 'local');
  t.is(g.platform.local.firstAddress, '127.0.9.2');
  t.deepEqual(
    g.regions.map((x) => x.name),
    ['us-east-1'],
  );
  t.deepEqual(g.roles.edge, { parentRole: 'relay' });
  const edge = g.rules.find((x) => x.role === 'edge')!;
  t.like(edge, { min: 1, max: 40, increment: 1, scaleOut: 'avg(cpu.usage) > 55.0', scaleIn: 'avg(cpu.usage) < 20.0', rank: 'cpu.usage', limit: 90 });
  // SM2's "0" limit of a relay is no limit: ours by default.
  t.is(g.rules.find((x) => x.role === 'relay')!.limit, 200);
  // Read back as SM2's clients read a NodeGroupConfig.
  const sm2 = groupToSm2(g);
  t.is(sm2.name, 'ng-oer');
  t.deepEqual(Object.keys(sm2.groups), ['us-east-1']);
  t.like((sm2.groups['us-east-1'] as { rulesByRole: Record<string, object> }).rulesByRole.edge!, {
    nodeRoleName: 'edge',
    min: 1,
    max: 40,
    outExpression: 'avg(cpu.usage) > 55.0',
    capacityLimitExpression: '90',
  });
});

test("node groups: our complaints about a translated group are told with SM2's paths", (t) => {
  const config = installerConfig('ng');
  const rules = config.groups!['us-east-1']!.rulesByRole as Record<string, Record<string, unknown>>;
  rules.edge!.inExpression = 'avg(cpu.usage) <';
  rules.origin!.min = '30';
  delete config.roles.relay!.parentRoleName;
  const r = groupToOurs(config, {});
  if (!r.ok) return t.fail(JSON.stringify(r.errors));
  const normalized = normalizeNodeGroup(r.translation.spec);
  if (!('errors' in normalized)) return t.fail('accepted');
  t.deepEqual(normalized.errors.map((e) => r.translation.pathOf(e.path)).sort(), ['groups.us-east-1.rulesByRole.edge.inExpression', 'groups.us-east-1.rulesByRole.origin.min', 'roles.relay'].sort());
  // What the translation itself refuses.
  const refused = (c: unknown) => {
    const x = groupToOurs(c as NodeGroupConfig, {});
    return x.ok ? [] : x.errors.map((e) => e.path);
  };
  t.deepEqual(refused({ ...installerConfig('ng'), roles: { ...installerConfig('ng').roles, mixer: { name: 'mixer', capabilities: ['MIX'] } } }), ['body.roles.mixer']);
  const { groups, ...noGroups } = installerConfig('ng');
  t.deepEqual(refused(noGroups), ['body.groups']);
  t.deepEqual(refused({ ...noGroups, groups, subGroups: groups }), ['body.subGroups']);
  t.deepEqual(refused({ ...noGroups, subGroups: { other: { ...groups!['us-east-1'], subGroupName: 'us-east-1' } } }), [
    'body.subGroups.other.subGroupName',
    'body.subGroups.other.rulesByRole.origin.subGroupName',
    'body.subGroups.other.rulesByRole.edge.subGroupName',
    'body.subGroups.other.rulesByRole.relay.subGroupName',
  ]);
});

test("node groups: a group of ours read as SM2's NodeGroupConfig and posted back is the same group", (t) => {
  const original = loadConfig({}).nodeGroups.find((g) => g.name === 'default')!;
  const r = groupToOurs(groupToSm2(original) as NodeGroupConfig, original.platform);
  if (!r.ok) return t.fail(JSON.stringify(r.errors));
  const again = normalizeNodeGroup(r.translation.spec);
  if ('errors' in again) return t.fail(JSON.stringify(again.errors));
  // Coordinates, listeners, timing (cooldowns among it) and the scope are not SM2's to say: the rest round-trips.
  const sayable = (rules: typeof original.rules) => rules.map(({ cooldown: _, ...rule }) => rule);
  t.deepEqual(sayable(again.group.rules), sayable(original.rules));
  t.deepEqual(
    again.group.regions.map((x) => x.name),
    original.regions.map((x) => x.name),
  );
  t.deepEqual(Object.keys(again.group.roles), Object.keys(original.roles));
});
