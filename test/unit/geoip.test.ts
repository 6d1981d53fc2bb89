import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { bundledDatabases, openGeoIp } from '../../src/geo/maxmind.js';
import { tempDir } from '../helpers/fixtures.js';
import { writeMmdb } from '../helpers/mmdb-writer.js';

test('the bundled database (flat layout) places known addresses; private and reserved ones have no place', async (t) => {
  const paths = bundledDatabases();
  t.is(paths.length, 2);
  const geo = await openGeoIp(paths);
  const us = geo.locate('8.8.8.8')!;
  t.true(us.lat > 24 && us.lat < 50 && us.lon > -125 && us.lon < -66, JSON.stringify(us));
  const gb = geo.locate('81.2.69.142')!;
  t.true(gb.lat > 49 && gb.lat < 59 && gb.lon > -8 && gb.lon < 2, JSON.stringify(gb));
  t.truthy(geo.locate('2001:4860:4860::8888'), 'IPv6 from the IPv6 file');
  for (const ip of ['10.1.2.3', '127.0.0.1', '192.168.1.1', '172.16.5.4', '100.64.0.1', '169.254.1.1', '::1', 'fd00::1', 'fe80::1', 'not-an-ip', '']) {
    t.is(geo.locate(ip), null, ip);
  }
});

test("a database in MaxMind's own layout (location.latitude) works too", async (t) => {
  const dir = tempDir();
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'city.mmdb');
  writeFileSync(
    file,
    writeMmdb([
      ['81.2.69.0/24', { city: { names: { en: 'London' } }, country: { iso_code: 'GB' }, location: { latitude: { double: 51.5142 }, longitude: { double: -0.0931 }, accuracy_radius: 10 } }],
      ['8.8.8.0/24', { country: { iso_code: 'US' }, location: { latitude: { double: 37.751 }, longitude: { double: -97.822 } } }],
      ['1.2.3.0/24', { country: { iso_code: 'XX' } }],
    ]),
  );
  const geo = await openGeoIp([file]);
  t.deepEqual(geo.locate('81.2.69.142'), { lat: 51.5142, lon: -0.0931 });
  t.deepEqual(geo.locate('8.8.8.8'), { lat: 37.751, lon: -97.822 });
  t.is(geo.locate('1.2.3.4'), null, 'a record without a location');
  t.is(geo.locate('9.9.9.9'), null, 'an address the database does not hold');
  t.is(geo.locate('2001:db8::1'), null, 'IPv6 against an IPv4-only database');
});
