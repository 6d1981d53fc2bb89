// Region orders: the configured order, or nearest-first from a point (docs/choosing-nodes.md).
import type { RegionConfig } from '../../config/types.js';

const EARTH_RADIUS_KM = 6371;
const rad = (deg: number) => (deg * Math.PI) / 180;

/** Great-circle (haversine) distance in kilometres. */
export function distanceKm(lat1: number, lon1: number, lat2: number, lon2: number): number {
  const dLat = rad(lat2 - lat1);
  const dLon = rad(lon2 - lon1);
  const a = Math.sin(dLat / 2) ** 2 + Math.cos(rad(lat1)) * Math.cos(rad(lat2)) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(a)));
}

/** Region names nearest first from (lat, lon); ties keep the configured order. */
export function regionsByDistance(regions: readonly RegionConfig[], lat: number, lon: number): string[] {
  return regions
    .map((r, i) => ({ name: r.name, i, d: distanceKm(lat, lon, r.lat, r.lon) }))
    .sort((a, b) => a.d - b.d || a.i - b.i)
    .map((r) => r.name);
}

/** Region names nearest first from one of the regions, that region first. */
export function regionsFrom(regions: readonly RegionConfig[], name: string): string[] {
  const from = regions.find((r) => r.name === name);
  return from ? regionsByDistance(regions, from.lat, from.lon) : regions.map((r) => r.name);
}
