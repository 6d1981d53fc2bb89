// A webhook endpoint as the config file's `webhooks` and the API's bodies write it (docs/webhooks.md).
import Type, { type Static } from 'typebox';
import { described, Name } from './node-group-schema.js';

export const MAX_WEBHOOKS = 64;

const EventType = Type.String({ pattern: '^[a-z]+(\\.[a-z]+|\\.\\*)?$', maxLength: 64, description: 'an event type (stream.live) or a family (stream.*)' });

export const WebhookSchema = Type.Object(
  {
    id: Type.Optional(described(Name, "the endpoint's name in the API, metrics and logs (default: made from its URL)")),
    url: Type.String({
      pattern: '^https?://[A-Za-z0-9._~:/?#@!&()*+,;=%\\[\\]-]+$',
      maxLength: 2048,
      description: 'an http:// or https:// URL; link-local and cloud metadata addresses are refused unless allowLinkLocal',
    }),
    secret: Type.String({
      pattern: '^whsec_([A-Za-z0-9+/]{22,}={0,2}|\\(kept\\))$',
      maxLength: 256,
      description: 'a Standard Webhooks secret: whsec_ and 16 or more random bytes in base64; whsec_(kept), as the API shows it, keeps the stored one in a replace',
    }),
    events: Type.Optional(Type.Array(EventType, { maxItems: 64, description: 'the event types it wants (stream.live, or stream.* for a family); none: all' })),
    groups: Type.Optional(Type.Array(Name, { maxItems: 256, description: 'the node groups whose events it wants; none: all' })),
    streams: Type.Optional(
      Type.Array(Type.String({ pattern: '^[A-Za-z0-9_~-][A-Za-z0-9._~-]{0,127}$' }), { maxItems: 1024, description: 'the streams whose events it wants (stream events only); none: all' }),
    ),
    allowLinkLocal: Type.Boolean({ default: false, description: 'allow a link-local or cloud metadata address (refused by default)' }),
  },
  { additionalProperties: false },
);

export type WebhookInput = Static<typeof WebhookSchema>;
