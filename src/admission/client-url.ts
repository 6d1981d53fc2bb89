// The whole URL a client connects to (the `url` of a lookup answer, docs/api.md): the node's
// listener, the group's scope, the stream, and the admission token when the group asks for one.
// Pure.
import type { AdmissionAction } from './grant.js';

export interface UrlInput {
  serverAddress: string;
  listener: { protocol: string; port: number };
  scope: string;
  stream: string;
  action: AdmissionAction;
  token?: string | undefined;
}

const hostOf = (address: string) => (address.includes(':') && !address.startsWith('[') ? `[${address}]` : address);

export function clientUrl(u: UrlInput): string {
  const base = `${u.listener.protocol}://${hostOf(u.serverAddress)}:${u.listener.port}`;
  const query = u.token === undefined ? '' : `?token=${encodeURIComponent(u.token)}`;
  switch (u.listener.protocol) {
    // A WebRTC node's WHIP or WHEP endpoint (src/agent/webrtc/endpoints.ts): POST the SDP offer here.
    // Its agent speaks plain HTTP; browsers reach it through the control plane's proxy instead.
    case 'whip':
    case 'whep':
      return `http://${hostOf(u.serverAddress)}:${u.listener.port}/${u.listener.protocol}/${u.scope}/${u.stream}${query}`;
    // The simulated node's session API: POST here opens the session (src/agent/simulated.ts).
    case 'http':
    case 'https':
      return `${base}/${u.scope}/${u.stream}/${u.action === 'publish' ? 'publish' : 'subscribe'}${query}`;
    default:
      // rtmp://host:port/<app>/<stream>?token=…: nginx-rtmp passes the query to on_publish/on_play.
      return `${base}/${u.scope}/${u.stream}${query}`;
  }
}
