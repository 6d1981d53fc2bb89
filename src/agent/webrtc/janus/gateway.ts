// The Janus API as the engine uses it, over janode's WebSocket connection: VideoRoom rooms and
// publishers, RTP forwarders, Streaming mountpoints and viewers. Every answer is checked here, so
// the engine sees typed values or an error that says what Janus said. One control session holds
// a VideoRoom and a Streaming handle for requests that belong to no client; each client gets a
// session of its own, so that destroying it ends everything Janus holds for that client.
import Janode, { type JanodeConnection, type JanodeHandle, type JanodeSession, type JanusMessage, type Jsep } from 'janode';
import StreamingPlugin from 'janode/plugins/streaming';
import VideoRoomPlugin from 'janode/plugins/videoroom';

// janode logs every request at `info` on the console: the agent's log is for the agent.
Janode.Logger.setLevel('none');

export class JanusError extends Error {
  constructor(
    message: string,
    /** Janus's error code (e.g. 426 no such room, 428 no such feed, 455 no such mountpoint), when it gave one. */
    readonly code: number | null = null,
  ) {
    super(message);
    this.name = 'JanusError';
  }
}

/** A janode rejection (`"<code> <reason>"`) as a JanusError. */
function asJanusError(err: unknown): JanusError {
  if (err instanceof JanusError) return err;
  const message = err instanceof Error ? err.message : String(err);
  const code = /^(\d{3}) /.exec(message)?.[1];
  return new JanusError(`janus: ${message}`, code ? Number(code) : null);
}

async function call<T>(op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    throw asJanusError(err);
  }
}

/** The plugin's data of an answer, checked to be what `expected` names (`videoroom: "created"`, say). */
function pluginData(msg: JanusMessage, plugin: 'videoroom' | 'streaming', expected: string): Record<string, unknown> {
  const data = msg.plugindata?.data;
  if (!data || typeof data !== 'object') throw new JanusError(`janus answered without plugin data: ${JSON.stringify(msg).slice(0, 200)}`);
  if (typeof data.error === 'string') throw new JanusError(`janus: ${data.error_code} ${data.error}`, Number(data.error_code) || null);
  if (data[plugin] !== expected) throw new JanusError(`janus answered ${JSON.stringify(data).slice(0, 200)} where ${plugin} ${expected} was expected`);
  return data;
}

function jsepOf(msg: JanusMessage, type: Jsep['type']): string {
  const jsep = msg.jsep;
  if (!jsep || jsep.type !== type || typeof jsep.sdp !== 'string') throw new JanusError(`janus answered without an SDP ${type}${jsep ? ` (it sent an ${jsep.type})` : ''}`);
  return jsep.sdp;
}

/** One media of an RTP forwarder or mountpoint. */
export interface RtpMedia {
  kind: 'audio' | 'video';
  /** The mid (in a mountpoint: ours; in a publisher: Janus's). */
  mid: string;
  pt: number;
  codec: 'opus' | 'vp8';
}

export interface MountpointPorts {
  kind: 'audio' | 'video';
  mid: string;
  port: number;
  rtcpPort: number;
}

/** What a client's session is: its own Janus session and plugin handle. */
export interface ClientHandle {
  session: JanodeSession;
  handle: JanodeHandle;
}

export class JanusGateway {
  private constructor(
    private readonly connection: JanodeConnection,
    private readonly control: JanodeSession,
    private readonly videoroom: JanodeHandle,
    private readonly streaming: JanodeHandle,
    private readonly pluginKey: string,
  ) {}

  static async connect(url: string, apiSecret: string, pluginKey: string): Promise<JanusGateway> {
    const connection = await call(() => Janode.connect({ address: { url, apisecret: apiSecret }, retry_time_secs: 1, max_retries: 1 }));
    try {
      const control = await call(() => connection.create());
      const videoroom = await call(() => control.attach(VideoRoomPlugin));
      const streaming = await call(() => control.attach(StreamingPlugin));
      return new JanusGateway(connection, control, videoroom, streaming, pluginKey);
    } catch (err) {
      await connection.close().catch(() => undefined);
      throw err;
    }
  }

  /** Called once when the connection to Janus ends without close() (Janus died). */
  onLost(listener: (why: string) => void): void {
    this.connection.once(Janode.EVENT.CONNECTION_ERROR, (err: Error) => listener(err?.message ?? 'connection lost'));
  }

  async close(): Promise<void> {
    // Janus also ends every session of a WebSocket that closes; this says goodbye first.
    await this.control.destroy().catch(() => undefined);
    await this.connection.close().catch(() => undefined);
  }

  /** A session and handle of its own for one client. */
  async clientHandle(plugin: 'videoroom' | 'streaming'): Promise<ClientHandle> {
    const session = await call(() => this.connection.create());
    try {
      const handle = await call(() => session.attach(plugin === 'videoroom' ? VideoRoomPlugin : StreamingPlugin));
      return { session, handle };
    } catch (err) {
      await session.destroy().catch(() => undefined);
      throw err;
    }
  }

  /** Ends a client's session: Janus hangs up its PeerConnection and detaches its handle. */
  async endClient(client: ClientHandle): Promise<void> {
    await client.session.destroy().catch(() => undefined);
  }

  // VideoRoom.

  /** A room for one stream's publisher: VP8 and Opus only, so every viewer and forwarder sees one codec per kind. */
  async createRoom(room: number): Promise<void> {
    const body = { request: 'create', room, admin_key: this.pluginKey, publishers: 1, videocodec: 'vp8', audiocodec: 'opus', notify_joining: false, is_private: true };
    try {
      pluginData(await call(() => this.videoroom.message(body)), 'videoroom', 'created');
    } catch (err) {
      // 427: the room exists already (left by an earlier publisher).
      if ((err as JanusError).code !== 427) throw err;
    }
  }

  async destroyRoom(room: number): Promise<void> {
    pluginData(await call(() => this.videoroom.message({ request: 'destroy', room, admin_key: this.pluginKey })), 'videoroom', 'destroyed');
  }

  /** Joins a publisher with its offer; resolves with Janus's answer. */
  async publish(client: ClientHandle, room: number, feed: number, offer: string, display: string): Promise<string> {
    const msg = await call(() => client.handle.message({ request: 'joinandconfigure', ptype: 'publisher', room, id: feed, display }, { type: 'offer', sdp: offer }));
    pluginData(msg, 'videoroom', 'joined');
    return jsepOf(msg, 'answer');
  }

  /** Forwards a publisher's media to host:port (and takes RTCP back on rtcp_port, so a viewer's PLI reaches the publisher); the forwarders' ids. */
  async rtpForward(room: number, feed: number, host: string, media: ReadonlyArray<{ mid: string; port: number; rtcpPort: number; pt: number; ssrc: number }>): Promise<number[]> {
    const streams = media.map((m) => ({ mid: m.mid, port: m.port, rtcp_port: m.rtcpPort, pt: m.pt, ssrc: m.ssrc }));
    const data = pluginData(
      await call(() => this.videoroom.message({ request: 'rtp_forward', room, publisher_id: feed, host, host_family: 'ipv4', admin_key: this.pluginKey, streams })),
      'videoroom',
      'rtp_forward',
    );
    const forwarders = Array.isArray(data.forwarders) ? (data.forwarders as Array<{ stream_id?: unknown }>) : [];
    const ids = forwarders.map((f) => Number(f.stream_id)).filter((id) => Number.isInteger(id) && id > 0);
    if (ids.length !== media.length) throw new JanusError(`janus started ${ids.length} of ${media.length} forwarders: ${JSON.stringify(data).slice(0, 200)}`);
    return ids;
  }

  async stopRtpForward(room: number, feed: number, streamId: number): Promise<void> {
    pluginData(await call(() => this.videoroom.message({ request: 'stop_rtp_forward', room, publisher_id: feed, stream_id: streamId, admin_key: this.pluginKey })), 'videoroom', 'stop_rtp_forward');
  }

  // Streaming.

  /** An RTP mountpoint whose ports Janus picks (`port: 0`), read from the raw answer (janode's createRtpMountpoint drops them). */
  async createMountpoint(id: number, media: readonly RtpMedia[]): Promise<MountpointPorts[]> {
    const body = {
      request: 'create',
      type: 'rtp',
      id,
      name: `sy-${id}`,
      admin_key: this.pluginKey,
      is_private: true,
      media: media.map((m) => ({ type: m.kind, mid: m.mid, port: 0, rtcpport: 0, pt: m.pt, codec: m.codec })),
    };
    const data = pluginData(await call(() => this.streaming.message(body)), 'streaming', 'created');
    const stream = data.stream as { ports?: Array<{ type?: unknown; mid?: unknown; port?: unknown; rtcp_port?: unknown }> } | undefined;
    const ports = (stream?.ports ?? []).map((p) => ({ kind: p.type as 'audio' | 'video', mid: String(p.mid), port: Number(p.port), rtcpPort: Number(p.rtcp_port) }));
    for (const m of media) {
      const p = ports.find((x) => x.mid === m.mid);
      if (!p || !(p.port > 0) || !(p.rtcpPort > 0)) throw new JanusError(`janus created mountpoint ${id} without a port for ${m.mid}: ${JSON.stringify(stream).slice(0, 300)}`);
    }
    return ports;
  }

  async destroyMountpoint(id: number): Promise<void> {
    pluginData(await call(() => this.streaming.message({ request: 'destroy', id, admin_key: this.pluginKey })), 'streaming', 'destroyed');
  }

  /** Janus's offer for a viewer of a mountpoint (1.1.2 offers; it ignores a viewer's offer). */
  async watch(client: ClientHandle, id: number): Promise<string> {
    const msg = await call(() => client.handle.message({ request: 'watch', id }));
    pluginData(msg, 'streaming', 'event');
    return jsepOf(msg, 'offer');
  }

  /** The viewer's answer (bridged: sdp.ts). */
  async start(client: ClientHandle, answer: string): Promise<void> {
    pluginData(await call(() => client.handle.message({ request: 'start' }, { type: 'answer', sdp: answer })), 'streaming', 'event');
  }
}
