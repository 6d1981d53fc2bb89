// SM2's ProvisionRequest ⇄ our provision (docs/migrating-from-red5-sm2.md). SM2 posts an array
// of them: a `provisionGuid` (the Android and iOS testbeds send `streamGuid` there instead) and
// its variants, each a `streamGuid`, an `abrLevel` (1 is the best) and `videoParams`. Our
// provision of the same stream name gets the variants as renditions; what SM2 does not say (frame
// rate, audio bitrate, the region whose origin receives the renditions) takes a default. Pure.
import Type, { type Static } from 'typebox';
import type { Provision, Rendition } from '../../domain/records.js';
import { NAME_MAX, NAME_PATTERN } from '../../domain/vocabulary.js';
import { guidOf, splitGuid, streamOf } from './names.js';

const SEGMENT = '[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}';
export const GUID_PATTERN = `^${SEGMENT}(/${SEGMENT}){1,2}$`;
export const Guid = Type.String({ pattern: GUID_PATTERN, description: 'scope/name or scope/room/name, each part 1–128 characters of [A-Za-z0-9._-] not starting with a dot' });

/** What SM2 does not say of a variant: Switchyard's transcoders need it. */
export const DEFAULT_FPS = 30;
export const DEFAULT_AUDIO_BR = 128_000;

const Bitrate = Type.Integer({ minimum: 1000, maximum: 200_000_000, description: 'bits per second' });

const Variant = Type.Object(
  {
    streamGuid: Guid,
    abrLevel: Type.Integer({ minimum: 0, maximum: 255, description: 'a lower number is a better quality; unique in a provision' }),
    videoParams: Type.Object(
      {
        videoWidth: Type.Integer({ minimum: 16, maximum: 7680 }),
        videoHeight: Type.Integer({ minimum: 16, maximum: 4320 }),
        videoBitRate: Type.Optional(Bitrate),
        /** The HTML5 testbed's TypeScript service spells it so. */
        videoBitrate: Type.Optional(Bitrate),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);

export const ProvisionRequest = Type.Object(
  {
    provisionGuid: Type.Optional(Guid),
    /** Where the Android and iOS testbeds put the provision's guid. */
    streamGuid: Type.Optional(Guid),
    messageType: Type.Optional(Type.Literal('ProvisionCommand')),
    /** Publisher credentials for SM2's nodes: accepted and dropped, never stored or logged. */
    credentials: Type.Optional(Type.Union([Type.Null(), Type.Record(Type.String({ maxLength: 64 }), Type.Union([Type.String({ maxLength: 1024 }), Type.Null()]), { maxProperties: 8 })])),
    capabilities: Type.Optional(Type.Array(Type.String({ pattern: '^[A-Z]{1,16}$' }), { maxItems: 8, description: 'must include TRANSCODE: a provision here is a transcoding ladder' })),
    region: Type.Optional(Type.String({ pattern: NAME_PATTERN, maxLength: NAME_MAX, description: "one of the node group's regions; default its first" })),
    streams: Type.Array(Variant, { minItems: 1, maxItems: 16 }),
  },
  { additionalProperties: false },
);
export type ProvisionRequest = Static<typeof ProvisionRequest>;

export const ProvisionRequests = Type.Array(ProvisionRequest, { minItems: 1, maxItems: 16 });

/** What GET answers: the request's shape, with the region the renditions go to. */
export const ProvisionView = Type.Object({
  provisionGuid: Type.String(),
  region: Type.String(),
  streams: Type.Array(
    Type.Object({
      streamGuid: Type.String(),
      abrLevel: Type.Integer(),
      videoParams: Type.Object({ videoWidth: Type.Integer(), videoHeight: Type.Integer(), videoBitRate: Type.Integer() }),
    }),
  ),
});

export interface OurProvision {
  streamName: string;
  region: string;
  streams: Rendition[];
}

type Problems = Array<{ path: string; message: string }>;

/** The guid of a request: `provisionGuid`, or `streamGuid` where the mobile testbeds put it. */
export function provisionGuidOf(r: ProvisionRequest): string | undefined {
  return r.provisionGuid ?? r.streamGuid;
}

/**
 * Our provisions for SM2's requests in a group of `scope` whose first region is `firstRegion`,
 * or every problem, with paths into the body (`body[0].streams[1].streamGuid`).
 */
export function toOurs(requests: readonly ProvisionRequest[], scope: string, firstRegion: string): { ok: true; provisions: OurProvision[] } | { ok: false; errors: Problems } {
  const errors: Problems = [];
  const provisions: OurProvision[] = [];
  const named = (guid: string, path: string): string | null => {
    const parsed = streamOf(splitGuid(guid)!, scope);
    if (parsed.ok) return parsed.stream;
    errors.push({ path, message: parsed.errors.some((e) => e.path === 'path.scope') ? `must be in the node group's scope '${scope}'` : 'names too long a stream' });
    return null;
  };
  const seen = new Map<string, number>();
  requests.forEach((r, i) => {
    const at = `body[${i}]`;
    if (r.provisionGuid !== undefined && r.streamGuid !== undefined && r.provisionGuid !== r.streamGuid) {
      errors.push({ path: `${at}.streamGuid`, message: 'must be the provisionGuid when both are given' });
    }
    const guid = provisionGuidOf(r);
    if (guid === undefined) errors.push({ path: `${at}.provisionGuid`, message: 'is required' });
    if (r.capabilities && !r.capabilities.includes('TRANSCODE')) {
      errors.push({ path: `${at}.capabilities`, message: 'must include TRANSCODE: a provision in Switchyard is a transcoding ladder (publishers that send every variant themselves need none)' });
    }
    const streamName = guid === undefined ? null : named(guid, `${at}.${r.provisionGuid !== undefined ? 'provisionGuid' : 'streamGuid'}`);
    if (streamName !== null) {
      if (seen.has(streamName)) errors.push({ path: `${at}.provisionGuid`, message: `repeats the guid of body[${seen.get(streamName)}]` });
      else seen.set(streamName, i);
    }
    const streams: Rendition[] = [];
    r.streams.forEach((v, j) => {
      const name = named(v.streamGuid, `${at}.streams[${j}].streamGuid`);
      const videoBR = v.videoParams.videoBitRate ?? v.videoParams.videoBitrate;
      if (videoBR === undefined) errors.push({ path: `${at}.streams[${j}].videoParams.videoBitRate`, message: 'is required' });
      if (name === null || videoBR === undefined) return;
      streams.push({ name, level: v.abrLevel, videoBR, videoWidth: v.videoParams.videoWidth, videoHeight: v.videoParams.videoHeight, videoFPS: DEFAULT_FPS, audioBR: DEFAULT_AUDIO_BR });
    });
    if (streamName !== null) provisions.push({ streamName, region: r.region ?? firstRegion, streams });
  });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, provisions };
}

/** Our stored provision as SM2's clients read it. */
export function toSm2(p: Provision, scope: string): Static<typeof ProvisionView> {
  return {
    provisionGuid: guidOf(scope, p.streamName),
    region: p.region,
    streams: p.streams.map((r) => ({ streamGuid: guidOf(scope, r.name), abrLevel: r.level, videoParams: { videoWidth: r.videoWidth, videoHeight: r.videoHeight, videoBitRate: r.videoBR } })),
  };
}
