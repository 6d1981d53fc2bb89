// What a heartbeat reply carries for admission (docs/security.md, "Who may publish and play"):
// the node's own key and whether it must ask for tokens, the credential an edge or relay presents
// to its parent, and what a transcoder presents to publish each rendition to its origin. Added by
// the front end that answers the heartbeat (any instance of a cluster: all derive the same keys).
import type { AdmissionConfig } from '../config/types.js';
import type { HeartbeatReply } from '../schemas/heartbeat.js';
import type { AdmissionIssuer } from './issuer.js';

export function withAdmission(reply: HeartbeatReply, issuer: AdmissionIssuer, group: string, settings: AdmissionConfig, nodeId: string): HeartbeatReply {
  const admission = { required: settings.enabled, keys: [issuer.keyOf(group, nodeId)], leewayMs: settings.clockLeeway };
  if (!settings.enabled) return { ...reply, admission };
  return {
    ...reply,
    admission,
    parent: reply.parent ? { ...reply.parent, credential: issuer.relay(group, reply.parent.nodeId, nodeId) } : null,
    ...(reply.transcode
      ? { transcode: reply.transcode.map((job) => ({ ...job, tokens: Object.fromEntries(job.renditions.map((r) => [r.name, issuer.push(group, job.origin.nodeId, nodeId, r.name)])) })) }
      : {}),
  };
}
