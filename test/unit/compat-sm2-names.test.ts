// SM2's guids and our stream names (docs/migrating-from-red5-sm2.md): the mapping is one to one
// and goes back where it came from; a client address is a rate subject, an IPv6 one by its /64.
import test from 'ava';
import fc from 'fast-check';
import { addressSubject, basicCredentials } from '../../src/compat/red5sm2/access.js';
import { cursorBefore, guidOf, splitGuid, streamOf, type Guid } from '../../src/compat/red5sm2/names.js';
import { pageKeys } from '../../src/domain/paging.js';
import { STREAM_NAME_RE } from '../../src/domain/vocabulary.js';

const segment = fc.stringMatching(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,20}$/);
const guid: fc.Arbitrary<Guid> = fc.record({ scope: fc.constant('live'), room: fc.option(segment, { nil: undefined }), name: segment }, { requiredKeys: ['scope', 'name'] });
const text = (g: Guid) => [g.scope, ...(g.room !== undefined ? [g.room] : []), g.name].join('/');

test("a guid of the group's scope is a stream name of ours, and the name gives the guid back", (t) => {
  fc.assert(
    fc.property(guid, (g) => {
      const parsed = streamOf(g, 'live');
      if (!parsed.ok) return false;
      return STREAM_NAME_RE.test(parsed.stream) && guidOf('live', parsed.stream) === text(g) && JSON.stringify(splitGuid(text(g))) === JSON.stringify(g);
    }),
  );
  t.is(guidOf('live', 'room1~cam1'), 'live/room1/cam1');
});

test('two guids never share a stream name', (t) => {
  fc.assert(
    fc.property(guid, guid, (a, b) => {
      const x = streamOf(a, 'live');
      const y = streamOf(b, 'live');
      return !x.ok || !y.ok || text(a) === text(b) || x.stream !== y.stream;
    }),
  );
  t.deepEqual(streamOf({ scope: 'live', room: 'room1', name: 'cam1' }, 'live'), { ok: true, stream: 'room1~cam1' });
});

test("a scope not the group's, a ~, a hidden segment or too long a name is refused, naming the part", (t) => {
  const paths = (g: Guid) => {
    const r = streamOf(g, 'live');
    return r.ok ? [] : r.errors.map((e) => e.path);
  };
  t.deepEqual(paths({ scope: 'vod', name: 'cam1' }), ['path.scope']);
  t.deepEqual(paths({ scope: 'live', name: 'a~b' }), ['path.name']);
  t.deepEqual(paths({ scope: 'live', room: '.hidden', name: 'cam1' }), ['path.room']);
  t.deepEqual(paths({ scope: 'live', room: 'r'.repeat(64), name: 'n'.repeat(64) }), ['path.name']);
  t.is(splitGuid('live'), null);
  t.is(splitGuid('a/b/c/d'), null);
});

test('the cursor before a name lists that name first, whatever other names exist', (t) => {
  const name = fc.stringMatching(/^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,8}$/);
  fc.assert(
    fc.property(fc.uniqueArray(name, { maxLength: 50 }), name, (others, target) => {
      const keys = [...new Set([...others, target])];
      t.deepEqual(pageKeys(keys, cursorBefore(target), 1), [target]);
      const without = keys.filter((k) => k !== target);
      const next = pageKeys(without, cursorBefore(target), 1)[0];
      return next === undefined || next > target;
    }),
  );
});

test('a client address is its own subject; an IPv6 address is its /64, however it is written', (t) => {
  t.is(addressSubject('203.0.113.5'), 'ip:203.0.113.5');
  const same = ['2001:db8:1:2::1', '2001:0db8:0001:0002:0000:0000:0000:0002', '2001:DB8:1:2:ffff::3', '2001:db8:1:2:1:2:3:4'].map(addressSubject);
  t.is(new Set(same).size, 1, same.join(' '));
  t.is(same[0], 'ip:2001:db8:1:2::/64');
  t.not(addressSubject('2001:db8:1:3::1'), same[0]);
  t.is(addressSubject('::1'), 'ip:0:0:0:0::/64');
  t.is(addressSubject('2001:db8::'), 'ip:2001:db8:0:0::/64');
  const group = fc.integer({ min: 0, max: 0xffff }).map((n) => n.toString(16));
  fc.assert(
    fc.property(fc.array(group, { minLength: 8, maxLength: 8 }), fc.array(group, { minLength: 4, maxLength: 4 }), (a, tail) => {
      const full = a.join(':');
      const other = [...a.slice(0, 4), ...tail].join(':');
      return addressSubject(full) === addressSubject(other);
    }),
  );
});

test('Basic credentials: user and password split at the first colon; anything else is no credentials', (t) => {
  const b64 = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;
  t.deepEqual(basicCredentials(b64('admin:pa:ss')), { username: 'admin', password: 'pa:ss' });
  t.deepEqual(basicCredentials(`basic   ${Buffer.from('u:p').toString('base64')}`), { username: 'u', password: 'p' });
  for (const bad of ['', 'Bearer x', b64('nocolon'), b64(':password'), b64('user:'), 'Basic !!!', b64(`${'u'.repeat(300)}:p`)]) t.is(basicCredentials(bad), null, bad);
});
