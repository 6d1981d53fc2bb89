// A region named by a client, checked against a node group's regions: one wording for the front
// end (which names it with every other bad field) and the group actor (which decides).
export function unknownRegion(regions: readonly { name: string }[], region: string): string | null {
  return regions.some((r) => r.name === region) ? null : `must be one of the node group's regions (${regions.map((r) => r.name).join(', ')})`;
}

/** Where a client is (from its IP address: src/geo), for nearest-region routing. */
export interface Location {
  lat: number;
  lon: number;
}
