// A node agent's heartbeat and the orders in its reply (docs/nodes.md): declared once, here, and
// used by the API (validation and the OpenAPI document), the group model that applies it and
// the agent that sends it.
import Type, { type Static } from 'typebox';
import { ListenerSchema, Rendition, StreamName } from './api.js';

const Finite = Type.Number({ minimum: -1e15, maximum: 1e15 });
const Codec = Type.String({ maxLength: 32, pattern: '^[A-Za-z0-9._ -]*$' });

/** What a node says of one stream's media, where it can (docs/api.md, per-stream statistics): all optional. */
export const StreamMediaSchema = Type.Object({
  bitrateIn: Type.Optional(Type.Integer({ minimum: 0, maximum: 1e11, description: 'bits per second coming in (the publisher, or the pull from the parent)' })),
  bitrateOut: Type.Optional(Type.Integer({ minimum: 0, maximum: 1e12, description: 'bits per second going out to viewers and children' })),
  uptimeMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 1e13, description: 'how long the stream has been on this node' })),
  video: Type.Optional(
    Type.Object(
      {
        codec: Type.Optional(Codec),
        width: Type.Optional(Type.Integer({ minimum: 0, maximum: 16384 })),
        height: Type.Optional(Type.Integer({ minimum: 0, maximum: 16384 })),
        fps: Type.Optional(Type.Number({ minimum: 0, maximum: 1000 })),
      },
      { additionalProperties: false },
    ),
  ),
  audio: Type.Optional(
    Type.Object(
      {
        codec: Type.Optional(Codec),
        channels: Type.Optional(Type.Integer({ minimum: 0, maximum: 64 })),
        sampleRate: Type.Optional(Type.Integer({ minimum: 0, maximum: 768_000 })),
      },
      { additionalProperties: false },
    ),
  ),
});
export type StreamMedia = Static<typeof StreamMediaSchema>;
const Host = Type.String({ minLength: 1, maxLength: 253, pattern: '^[A-Za-z0-9.:_-]+$' });

export const HeartbeatSchema = Type.Object(
  {
    ready: Type.Boolean(),
    address: Type.Optional(Type.Object({ public: Type.Optional(Host), private: Type.Optional(Host) }, { additionalProperties: false })),
    listeners: Type.Optional(Type.Object({ publish: Type.Optional(ListenerSchema), subscribe: Type.Optional(ListenerSchema) }, { additionalProperties: false })),
    metrics: Type.Record(Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_.]{0,63}$' }), Finite, { maxProperties: 64 }),
    streams: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: StreamName,
            publishing: Type.Optional(
              Type.Boolean({ description: 'a publisher feeds the stream here; omitted, true on origins and transcoders (where a listed stream is a published one), false elsewhere' }),
            ),
            subscribers: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000 })),
            ...StreamMediaSchema.properties,
          },
          { additionalProperties: true },
        ),
        { maxItems: 20_000 },
      ),
    ),
    problem: Type.Optional(Type.String({ maxLength: 500, description: 'why the node is not ready, in words an operator can act on' })),
  },
  { additionalProperties: true, description: 'the node agent heartbeat (docs/nodes.md); unknown members are ignored, so agents can be newer than the service' },
);
/** One heartbeat, as the POST body or as a node channel message. */
export type Heartbeat = Static<typeof HeartbeatSchema>;

/** The node an edge or relay pulls from, with its pull listener when that node reports one. */
export const ParentOrderSchema = Type.Object({
  nodeId: Type.String(),
  address: Type.String(),
  port: Type.Optional(Type.Integer({ description: "the parent's pull listener, when it reports one" })),
  protocol: Type.Optional(Type.String()),
  credential: Type.Optional(Type.String({ description: 'what this node presents to pull from its parent (admission: a relay credential the parent checks)' })),
});
export type ParentOrder = Static<typeof ParentOrderSchema>;

/** A transcoder's order: a stream bound to it, its ladder, and the origin to push the renditions to. */
export const TranscodeJobSchema = Type.Object({
  stream: Type.String(),
  origin: Type.Object({ nodeId: Type.String(), address: Type.String(), port: Type.Integer(), protocol: Type.String() }),
  renditions: Type.Array(Rendition),
  tokens: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'admission: per rendition, what the transcoder presents to publish it to the origin' })),
});
export type TranscodeJob = Static<typeof TranscodeJobSchema>;

export const HeartbeatReplySchema = Type.Object({
  heartbeatMs: Type.Integer(),
  parent: Type.Union([ParentOrderSchema, Type.Null()]),
  drain: Type.Boolean(),
  token: Type.Optional(Type.String({ description: 'a fresh node token, sent when the current one is past half its life' })),
  transcode: Type.Optional(
    Type.Array(TranscodeJobSchema, {
      description: 'for transcoders: the streams to transcode, their renditions and the origin to push to; absent: no change (the control plane may still be loading its bindings)',
    }),
  ),
  drop: Type.Optional(
    Type.Object(
      {
        at: Type.Integer({ description: "the service's clock (ms)" }),
        streams: Type.Array(Type.String(), { description: 'streams this node lists as published that are not bound to it: their publishers are to be disconnected' }),
      },
      { description: 'admission: publishers to drop, and publish tokens of those streams issued up to `at` to refuse from now on' },
    ),
  ),
  admission: Type.Optional(
    Type.Object({
      required: Type.Boolean({ description: 'whether the node admits only clients holding a token (the group setting admission.enabled)' }),
      keys: Type.Array(Type.Object({ kid: Type.String(), key: Type.String() }), { description: "this node's admission keys, newest first" }),
      leewayMs: Type.Integer({ description: "slack for the clocks when checking a token's times" }),
    }),
  ),
  controlPlanes: Type.Optional(
    Type.Array(Type.String(), { maxItems: 64, description: "cluster mode: every live instance's URL, the answering one first; the agent moves to another when its own fails" }),
  ),
});
export type HeartbeatReply = Static<typeof HeartbeatReplySchema>;

/** What the agent hands its media backend: the reply's orders. */
export type NodeOrders = Pick<HeartbeatReply, 'parent' | 'drain' | 'transcode' | 'drop'>;
