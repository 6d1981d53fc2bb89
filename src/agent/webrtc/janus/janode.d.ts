// The part of janode (npm, plain JavaScript) the Janus engine uses, typed. gateway.ts is the only
// module that touches these; everything past it sees checked, typed answers.
declare module 'janode' {
  import type { EventEmitter } from 'node:events';

  export interface Jsep {
    type: 'offer' | 'answer';
    sdp: string;
  }

  /** A message from Janus as it came (janode resolves plugin requests with it). */
  export interface JanusMessage {
    janus: string;
    plugindata?: { plugin: string; data: Record<string, unknown> };
    jsep?: Jsep;
    [key: string]: unknown;
  }

  export interface PluginDescriptor {
    id: string;
    Handle: unknown;
  }

  export interface JanodeHandle extends EventEmitter {
    readonly id: number;
    message(body: Record<string, unknown>, jsep?: Jsep): Promise<JanusMessage>;
    trickle(candidate: object | object[]): Promise<unknown>;
    trickleComplete(): Promise<unknown>;
    hangup(): Promise<unknown>;
    detach(): Promise<void>;
  }

  export interface JanodeSession extends EventEmitter {
    readonly id: number;
    attach(plugin: PluginDescriptor): Promise<JanodeHandle>;
    destroy(): Promise<void>;
  }

  export interface JanodeConnection extends EventEmitter {
    create(keepaliveSeconds?: number): Promise<JanodeSession>;
    close(): Promise<void>;
  }

  export interface ConnectOptions {
    address: { url: string; apisecret?: string } | Array<{ url: string; apisecret?: string }>;
    retry_time_secs?: number;
    max_retries?: number;
    is_admin?: boolean;
  }

  const Janode: {
    connect(config: ConnectOptions): Promise<JanodeConnection>;
    Logger: { setLevel(level: 'none' | 'error' | 'warning' | 'info' | 'verbose' | 'debug'): string };
    EVENT: {
      CONNECTION_CLOSED: 'connection_closed';
      SESSION_DESTROYED: 'session_destroyed';
      HANDLE_DETACHED: 'handle_detached';
      HANDLE_ICE_FAILED: 'handle_ice_failed';
      HANDLE_HANGUP: 'handle_hangup';
      HANDLE_MEDIA: 'handle_media';
      HANDLE_WEBRTCUP: 'handle_webrtcup';
      HANDLE_SLOWLINK: 'handle_slowlink';
      HANDLE_TRICKLE: 'handle_trickle';
      CONNECTION_ERROR: 'connection_error';
    };
  };
  export default Janode;
}

declare module 'janode/plugins/videoroom' {
  import type { PluginDescriptor } from 'janode';
  const plugin: PluginDescriptor;
  export default plugin;
}

declare module 'janode/plugins/streaming' {
  import type { PluginDescriptor } from 'janode';
  const plugin: PluginDescriptor;
  export default plugin;
}
