// The client of a lookup (docs/choosing-nodes.md): the TCP peer, unless the server sits behind trusted
// proxies (`trustProxy`: N), in which case the address the N-th proxy from us saw.
import { isIP } from 'node:net';
import type { Ctx } from './context.js';

const unmap = (ip: string) => (ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip);

export function clientAddress(ctx: Ctx, trustProxy: boolean | number): string {
  const peer = unmap(ctx.req.socket.remoteAddress ?? '');
  const trusted = trustProxy === true ? 1 : trustProxy === false ? 0 : trustProxy;
  if (trusted === 0) return peer;
  const hops = ctx
    .get('x-forwarded-for')
    .split(',')
    .map((h) => h.trim())
    .filter((h) => isIP(unmap(h)) !== 0);
  const hop = hops[hops.length - trusted];
  return hop ? unmap(hop) : peer;
}
