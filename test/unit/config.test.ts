import test from 'ava';
import fc from 'fast-check';
import { ConfigError, DEFAULT_CONFIG_FILE, loadConfig, parseConfig } from '../../src/config/load.js';
import { normalizeNodeGroup } from '../../src/config/node-group.js';
import { readFileSync } from 'node:fs';
import { configurationReference } from '../../src/config/reference.js';
import { projectPath } from '../../src/paths.js';
import { localPlatformGroup, staticGroup } from '../helpers/fixtures.js';
import { DEFAULT_STATE_TIMEOUTS, LOAD_METRIC } from '../../src/domain/vocabulary.js';

const minimal = () => ({ nodeGroups: [staticGroup()] });
/** A config of one local group (`local`: its platform settings) with staticGroup's rules. */
const localConfig = (local: object, roles?: object) => ({ nodeGroups: [localPlatformGroup(roles ? { roles } : {}, local)] });

test('the shipped default config loads and is what a first start needs', (t) => {
  const config = loadConfig({});
  t.is(config.source, DEFAULT_CONFIG_FILE);
  t.is(config.server.port, 5080);
  t.is(config.server.host, '127.0.0.1');
  const g = config.nodeGroups.find((n) => n.name === 'default');
  t.truthy(g);
  t.is(config.defaultNodeGroup, 'default');
  t.is(g!.platform.type, 'local');
  t.true(g!.regions.length >= 2);
  for (const role of ['origin', 'edge', 'transcoder'] as const) {
    t.truthy(g!.roles[role], role);
    for (const r of g!.regions)
      t.truthy(
        g!.rules.find((rule) => rule.region === r.name && rule.role === role),
        `${role} in ${r.name}`,
      );
  }
  const first = g!.regions[0]!.name;
  t.true(g!.rules.find((r) => r.region === first && r.role === 'origin')!.min >= 1);
  t.true(g!.rules.find((r) => r.region === first && r.role === 'edge')!.min >= 1);
});

test('environment variables override the file', (t) => {
  const config = parseConfig(minimal(), 'test', {
    SWITCHYARD_HOST: '0.0.0.0',
    SWITCHYARD_PORT: '8080',
    SWITCHYARD_DATA_DIR: '/tmp/sy-data',
    SWITCHYARD_ADMIN_USER: 'boss',
    SWITCHYARD_LOG_LEVEL: 'debug',
    SWITCHYARD_GEOIP_DB: '/tmp/city.mmdb',
    SWITCHYARD_ADMIN_PASSWORD: 'a-long-enough-password',
    SWITCHYARD_JWT_SECRET: 'k'.repeat(32),
  });
  t.is(config.server.host, '0.0.0.0');
  t.is(config.server.port, 8080);
  t.is(config.dataDir, '/tmp/sy-data');
  t.is(config.auth.adminUser, 'boss');
  t.is(config.log.level, 'debug');
  t.deepEqual(config.geoip.databases, ['/tmp/city.mmdb']);
  t.is(config.auth.adminPassword, 'a-long-enough-password');
  t.is(config.auth.jwtSecret, 'k'.repeat(32));
});

test('durations are read in their units', (t) => {
  const g = staticGroup({ timing: { nodeTimeout: '1.5s', faultTimeout: 2500, drainTimeout: '2m' } });
  const config = parseConfig({ nodeGroups: [g] }, 'test');
  t.is(config.nodeGroups[0]!.timing.nodeTimeout, 1500);
  t.is(config.nodeGroups[0]!.timing.faultTimeout, 2500);
  t.is(config.nodeGroups[0]!.timing.drainTimeout, 120_000);
});

const problemsOf = (raw: unknown, env: Record<string, string> = {}) => {
  try {
    parseConfig(raw, 'test', env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
};

test('an invalid value is named with the field, the value and what was expected', (t) => {
  t.deepEqual(problemsOf(minimal(), { SWITCHYARD_PORT: 'http' }), ['server.port = "http" (from SWITCHYARD_PORT): must be integer']);
  t.deepEqual(problemsOf({ ...minimal(), server: { port: 70000 } }), ['server.port = 70000: must be <= 65535']);
  const [unknownField] = problemsOf({ ...minimal(), colour: 'blue' });
  t.is(unknownField, 'colour = "blue": is not an allowed field');
  t.regex(problemsOf({ nodeGroups: [{ ...staticGroup(), timing: { nodeTimeout: 'soon' } }] })[0]!, /nodeGroups\[0\]\.timing\.nodeTimeout = "soon": must be milliseconds, or a string such as "10s"/);
  t.deepEqual(problemsOf({ ...minimal(), server: { channelIdleTimeout: '10ms' } }), ['server.channelIdleTimeout = "10ms": must be at least 1s']);
  t.is(parseConfig({ ...minimal(), server: { channelIdleTimeout: '2m' } }, 'test').server.channelIdleTimeout, 120_000);
  t.is(parseConfig(minimal(), 'test').server.channelIdleTimeout, 300_000);
});

test('cross-references are checked: regions, roles, min and max, parents', (t) => {
  const g = staticGroup();
  const bad = {
    ...g,
    roles: { origin: {}, edge: { parentRole: 'transcoder' } },
    rules: [
      { region: 'r9', role: 'origin', min: 1, max: 2 },
      { region: 'r1', role: 'origin', min: 3, max: 2 },
      { region: 'r1', role: 'relay', min: 0, max: 1 },
    ],
  };
  const problems = problemsOf({ nodeGroups: [bad] });
  t.true(
    problems.some((p) => p.startsWith('nodeGroups[0].roles.edge.parentRole = "transcoder": must be origin or relay')),
    problems.join('\n'),
  );
  t.true(
    problems.some((p) => p.startsWith('nodeGroups[0].rules[0].region = "r9": must name one of the group\'s regions')),
    problems.join('\n'),
  );
  t.true(
    problems.some((p) => p.startsWith('nodeGroups[0].rules[1].min = 3: must not be above max (2)')),
    problems.join('\n'),
  );
  t.true(
    problems.some((p) => p.startsWith('nodeGroups[0].rules[2].role = "relay": role \'relay\' is not configured')),
    problems.join('\n'),
  );
  // Region names become Terraform module and provider names on that platform.
  const tf = (name: string) => problemsOf({ nodeGroups: [{ ...staticGroup({ regions: [name] }), platform: { type: 'terraform' } }] });
  t.deepEqual(tf('eu.west'), ['nodeGroups[0].regions[0].name = "eu.west": on the terraform platform, must be a Terraform identifier: letters, digits, _ and -, starting with a letter or _']);
  t.regex(tf('1a')[0] ?? '', /regions\[0\]\.name = "1a": on the terraform platform/);
  t.deepEqual(tf('us-east_1'), []);
  t.deepEqual(problemsOf({ nodeGroups: [staticGroup({ regions: ['eu.west'], nodes: [{ id: 'o1', role: 'origin', region: 'eu.west' }] })] }), [], 'other platforms keep the wider names');
});

test('secrets from the environment are checked without being shown', (t) => {
  const problems = problemsOf(minimal(), { SWITCHYARD_ADMIN_PASSWORD: 'short', SWITCHYARD_JWT_SECRET: 'tiny' });
  t.deepEqual(problems, ['SWITCHYARD_ADMIN_PASSWORD = (hidden): must be 12 to 1024 characters', 'SWITCHYARD_JWT_SECRET = (hidden): must be at least 32 bytes']);
});

test('any mangled config either loads or fails with ConfigError, never anything else', (t) => {
  const base = { server: { host: '127.0.0.1', port: 5080 }, defaultNodeGroup: 'g', ...minimal() } as Record<string, unknown>;
  const paths = [
    'server.port',
    'server.host',
    'nodeGroups.0.name',
    'nodeGroups.0.regions.0.lat',
    'nodeGroups.0.rules.0.min',
    'nodeGroups.0.timing.heartbeatMs',
    'nodeGroups.0.platform.type',
    'defaultNodeGroup',
    'nodeGroups',
  ];
  fc.assert(
    fc.property(fc.constantFrom(...paths), fc.anything(), (path, value) => {
      const raw = structuredClone(base);
      const keys = path.split('.');
      let node = raw as Record<string, unknown>;
      for (const k of keys.slice(0, -1)) node = node[k] as Record<string, unknown>;
      node[keys.at(-1)!] = value;
      try {
        parseConfig(raw, 'test');
        return true;
      } catch (err) {
        return err instanceof ConfigError && err.problems.length > 0;
      }
    }),
    { numRuns: 300 },
  );
  t.pass();
});

test('a normalized node group normalizes to itself (stored groups are re-read at every start)', (t) => {
  const rules = [
    { region: 'r1', role: 'edge', min: 1, max: 3, limit: 'avg(memory.total) / 50', scaleOut: 'avg(connections.subscriber) > 0.6 * limit', rank: 'connections.subscriber + cpu.load', cooldown: '30s' },
    { region: 'r2', role: 'origin', min: 0, max: 2 },
  ];
  const once = normalizeNodeGroup(staticGroup({ rules, timing: { nodeTimeout: '3s', stateTimeouts: { CREATING: '2m' } } }));
  if ('errors' in once) return t.fail(JSON.stringify(once.errors));
  const twice = normalizeNodeGroup(once.group);
  if ('errors' in twice) return t.fail(JSON.stringify(twice.errors));
  t.deepEqual(twice.group, once.group);
});

test('a normalised group has every duration in milliseconds, every state timeout, and each rule its rank, cooldown and budget', (t) => {
  const written = {
    ...staticGroup({
      rules: [
        { region: 'r1', role: 'edge', min: 0, max: 2, cooldown: '90s', requestBudget: 0 },
        { region: 'r2', role: 'origin', min: 0, max: 2, increment: 2 },
      ],
      timing: {
        nodeTimeout: '3s',
        faultTimeout: '1m',
        streamTimeout: '30s',
        publishTimeout: '2m',
        evaluationInterval: '500ms',
        cooldown: '45s',
        drainTimeout: '1h',
        stateTimeouts: { CREATING: '2m' },
      },
      admission: { tokenTtl: '5m', clockLeeway: '10s', webhook: { url: 'https://app.example.com/allow', secret: `whsec_${'A'.repeat(24)}`, timeout: '1.5s', cacheTtl: '1m' } },
    }),
    schedules: [{ name: 'friday', cron: '0 18 * * FRI', duration: '2h', role: 'edge', min: 1 }],
  };
  written.platform = { ...written.platform, terraform: { applyTimeout: '5m', commandTimeout: '30s', retryBackoff: '2s', batchWindow: '250ms' } } as typeof written.platform;
  const result = normalizeNodeGroup(written);
  if ('errors' in result) return t.fail(JSON.stringify(result.errors));
  const g = result.group;
  t.like(g.timing, { nodeTimeout: 3000, faultTimeout: 60_000, streamTimeout: 30_000, publishTimeout: 120_000, evaluationInterval: 500, cooldown: 45_000, drainTimeout: 3_600_000 });
  t.deepEqual(g.timing.stateTimeouts, { ...DEFAULT_STATE_TIMEOUTS, CREATING: 120_000 });
  t.like(g.admission, { tokenTtl: 300_000, clockLeeway: 10_000, webhook: { timeout: 1500, cacheTtl: 60_000 } });
  t.like(g.platform.terraform, { applyTimeout: 300_000, commandTimeout: 30_000, retryBackoff: 2000, batchWindow: 250 });
  t.is(g.schedules[0]!.duration, 7_200_000);
  t.like(g.rules[0], { rank: LOAD_METRIC.edge, cooldown: 90_000, requestBudget: 0 });
  t.like(g.rules[1], { rank: LOAD_METRIC.origin, cooldown: 45_000, requestBudget: 2 });
});

test('bad scaling expressions are refused at load with the rule, the field and the column', (t) => {
  const g = staticGroup({ rules: [{ region: 'r1', role: 'edge', min: 0, max: 2, scaleOut: 'avg(connections.subscriber) >', rank: 'avg(cpu.load)' }] });
  const problems = problemsOf({ nodeGroups: [g] });
  t.true(problems.includes('nodeGroups[0].rules[0].scaleOut = "avg(connections.subscriber) >": Expected expression after > (at column 30)'), problems.join('\n'));
  t.true(
    problems.some((p) => p.startsWith('nodeGroups[0].rules[0].rank = "avg(cpu.load)": aggregates such as avg() are not allowed')),
    problems.join('\n'),
  );
});

test('local nodes run the simulated backend unless the group chooses nginx-rtmp; the shipped media config loads', (t) => {
  t.is(parseConfig(localConfig({}), 'test').nodeGroups[0]!.platform.local.backend, 'simulated');
  const media = parseConfig(localConfig({ backend: 'nginx-rtmp', port: 1935 }, { origin: {}, edge: { parentRole: 'origin', subscribe: { protocol: 'rtmp', port: 1935 } }, transcoder: {} }), 'test')
    .nodeGroups[0]!;
  t.like(media.platform.local, { backend: 'nginx-rtmp', port: 1935, statPort: 18080 });
  const shipped = loadConfig({ SWITCHYARD_CONFIG: DEFAULT_CONFIG_FILE.replace(/default\.json$/, 'media.json') });
  t.like(shipped.nodeGroups[0]!.platform.local, { backend: 'nginx-rtmp', port: 1935 });
});

test('a backend that does not exist, and listeners nginx-rtmp nodes cannot serve, are refused with the field named', (t) => {
  t.deepEqual(problemsOf(localConfig({ backend: 'gstreamer' })), [
    'nodeGroups[0].platform.local.backend = "gstreamer": must be simulated (needs nothing beyond npm), nginx-rtmp (needs nginx, libnginx-mod-rtmp and ffmpeg), werift (WebRTC: WHIP and WHEP in the agent, needs nothing beyond npm; docs/webrtc.md) or janus (WebRTC on a Janus gateway per node, each in a network namespace of its own: needs root and Debian\'s janus; docs/webrtc.md#janus-nodes)',
  ]);
  const problems = problemsOf(localConfig({ backend: 'nginx-rtmp', port: 0, statPort: 0 }));
  t.true(
    problems.some((p) => p.startsWith('nodeGroups[0].platform.local.statPort = 0: must be >= 1')),
    problems.join('\n'),
  );
  const more = problemsOf(localConfig({ backend: 'nginx-rtmp', port: 0 }));
  t.true(
    more.some((p) => p.startsWith('nodeGroups[0].platform.local.port = 0: nginx-rtmp nodes listen on a fixed port')),
    more.join('\n'),
  );
  t.true(
    more.some((p) => p === 'nodeGroups[0].roles.edge.subscribe.protocol = "wss": nginx-rtmp nodes take rtmp only'),
    more.join('\n'),
  );
  const same = problemsOf(localConfig({ backend: 'nginx-rtmp', port: 1935, statPort: 1935 }, { origin: {}, edge: { parentRole: 'origin' }, transcoder: {} }));
  t.deepEqual(same, ['nodeGroups[0].platform.local.statPort = 1935: must differ from platform.local.port (1935)']);
});

test('docs/configuration.md is the reference the config schema generates (npm run docs:config)', (t) => {
  t.is(readFileSync(projectPath('docs', 'configuration.md'), 'utf8'), configurationReference(), 'stale: run npm run docs:config');
});

test('every environment variable the config loader reads is in the reference', (t) => {
  const read = new Set(readFileSync(projectPath('src', 'config', 'load.ts'), 'utf8').match(/SWITCHYARD_[A-Z0-9_]+/g));
  const reference = configurationReference();
  t.true(read.size > 5);
  for (const name of read) t.true(reference.includes(`| \`${name}\` |`), `${name} is read by the loader but not in docs/configuration.md`);
});
