// The Red5 SM2 layer's settings (docs/migrating-from-red5-sm2.md): off unless asked for, by the
// config file or SWITCHYARD_COMPAT_RED5SM2; a bad switch stops the start naming it.
import test from 'ava';
import { parseConfig } from '../../src/config/load.js';

test('config: SWITCHYARD_COMPAT_RED5SM2 turns the layer on or off; anything else stops the start naming it', (t) => {
  const base = { nodeGroups: [] };
  t.false(parseConfig(base, 'test').compat.red5sm2.enabled, 'off by default');
  t.false(parseConfig(base, 'test').compat.red5sm2.anonymousLookups, 'anonymous lookups off by default');
  for (const on of ['on', 'ON', 'true', '1']) t.true(parseConfig(base, 'test', { SWITCHYARD_COMPAT_RED5SM2: on }).compat.red5sm2.enabled, on);
  t.false(parseConfig({ ...base, compat: { red5sm2: { enabled: true, anonymousLookups: true } } }, 'test', { SWITCHYARD_COMPAT_RED5SM2: 'off' }).compat.red5sm2.enabled);
  t.true(parseConfig({ ...base, compat: { red5sm2: { anonymousLookups: true } } }, 'test', { SWITCHYARD_COMPAT_RED5SM2: 'on' }).compat.red5sm2.anonymousLookups, "the file's other settings stay");
  const err = t.throws(() => parseConfig(base, 'test', { SWITCHYARD_COMPAT_RED5SM2: 'maybe' }));
  t.regex(err!.message, /compat\.red5sm2\.enabled = "maybe" \(from SWITCHYARD_COMPAT_RED5SM2\)/);
  t.deepEqual(parseConfig(base, 'test').limits.lookups.anonymous, { perSecond: 50, burst: 500 });
});
