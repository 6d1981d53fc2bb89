// Cluster mode's settings (docs/cluster.md): from the file or the environment, checked at start.
import test from 'ava';
import { ConfigError, parseConfig } from '../../src/config/load.js';
import { staticGroup } from '../helpers/fixtures.js';

const problems = (raw: object, env: Record<string, string> = {}): string[] => {
  try {
    parseConfig(raw, 'test', env);
    return [];
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.message
      .split('\n')
      .slice(1)
      .map((l) => l.trim());
  }
};

test('no cluster settings: no cluster (the embedded default)', (t) => {
  t.is(parseConfig({}, 'test', {}).cluster, undefined);
});

test('SWITCHYARD_NATS_URL turns cluster mode on, comma-separated; SWITCHYARD_INSTANCE_ID names the instance', (t) => {
  const c = parseConfig({}, 'test', { SWITCHYARD_NATS_URL: 'nats://10.0.0.1:4222, nats://10.0.0.2:4222', SWITCHYARD_INSTANCE_ID: 'east-1' }).cluster!;
  t.deepEqual(c.servers, ['nats://10.0.0.1:4222', 'nats://10.0.0.2:4222']);
  t.is(c.instanceId, 'east-1');
  t.is(c.leaseTtl, 3000);
  t.is(c.replicas, 3);
  t.is(c.snapshotEntries, 10_000);
  t.is(c.snapshotInterval, 3_600_000);
});

test('bad cluster settings stop the start, named', (t) => {
  t.regex(problems({}, { SWITCHYARD_NATS_URL: 'http://x:4222' }).join('\n'), /cluster\.nats\[0\].*from SWITCHYARD_NATS_URL|cluster\.nats\[0\]/);
  t.regex(problems({}, { SWITCHYARD_NATS_URL: 'nats://x:4222', SWITCHYARD_INSTANCE_ID: 'has space' }).join('\n'), /cluster\.instanceId/);
  t.regex(problems({ cluster: { nats: ['nats://x:4222'], leaseTtl: '200ms' } }).join('\n'), /cluster\.leaseTtl.*at least 1 s/);
  t.regex(problems({ cluster: { nats: ['nats://x:4222'], replicas: 2 } }).join('\n'), /cluster\.replicas/);
  t.regex(problems({ cluster: { nats: ['nats://x:4222'], snapshotEntries: 10 } }).join('\n'), /cluster\.snapshotEntries/);
  t.regex(problems({ cluster: { nats: ['nats://x:4222'], snapshotInterval: '10ms' } }).join('\n'), /cluster\.snapshotInterval.*at least 1 s/);
});

test('terraform node groups are accepted in cluster mode (their state is shared: docs/cluster.md), as without it', (t) => {
  const group = { ...staticGroup({ name: 'tf' }), platform: { type: 'terraform', terraform: { module: 'local' } } };
  t.deepEqual(problems({ nodeGroups: [group], cluster: { nats: ['nats://x:4222'] } }), []);
  t.deepEqual(problems({ nodeGroups: [group] }), []);
});
