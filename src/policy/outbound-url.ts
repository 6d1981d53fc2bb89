// Where the service may send requests of its own (an admission webhook, an event webhook): the
// operator names the URL, but a URL is also how a server is turned against its own network.
// Loopback and private addresses are fine (operators' back ends live there); link-local
// addresses and the clouds' metadata services are not, unless the operator says so, because that
// is where a cloud machine's credentials are read from. Pure: the same rule is applied to the
// URL when it is configured and to every address its name resolves to when it is used
// (src/outbound/http-post.ts), so a name that later resolves to 169.254.169.254 is refused too.
import { isIP } from 'node:net';

/** Names of metadata services that resolve inside clouds. */
const METADATA_NAMES = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal']);

/** Metadata addresses outside the link-local ranges (Alibaba, Oracle's legacy one, AWS over IPv6). */
const METADATA_ADDRESSES = new Set(['100.100.100.200', '192.0.0.192', 'fd00:ec2::254']);

function ipv4Parts(ip: string): number[] {
  return ip.split('.').map(Number);
}

/** Why the service must not connect to this address, or null. */
export function forbiddenAddress(ip: string): string | null {
  const family = isIP(ip);
  if (family === 0) return `'${ip}' is not an IP address`;
  const lower = ip.toLowerCase();
  if (METADATA_ADDRESSES.has(lower)) return `${ip} is a cloud metadata address`;
  if (family === 4) {
    const [a, b] = ipv4Parts(ip);
    if (a === 169 && b === 254) return `${ip} is link-local (169.254.0.0/16: where clouds serve instance metadata)`;
    if (a === 0) return `${ip} is not an address to connect to`;
    return null;
  }
  // IPv4-mapped IPv6 (::ffff:169.254.169.254, which URLs write ::ffff:a9fe:a9fe) is the IPv4 address in disguise.
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (mapped) return forbiddenAddress(mapped[1]!);
  const hex = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const [hi, lo] = [Number.parseInt(hex[1]!, 16), Number.parseInt(hex[2]!, 16)];
    return forbiddenAddress(`${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`);
  }
  if (/^fe[89ab][0-9a-f]:/.test(lower)) return `${ip} is link-local (fe80::/10)`;
  if (lower === '::') return `${ip} is not an address to connect to`;
  return null;
}

export interface OutboundUrlOptions {
  /** The operator allows link-local and metadata addresses for this URL. */
  allowLinkLocal?: boolean;
}

/** Why the service must not send requests to `url`, or null (then it is an http(s) URL without credentials). */
export function outboundUrlProblem(url: string, options: OutboundUrlOptions = {}): string | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'is not a URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'must be an http:// or https:// URL';
  if (u.username !== '' || u.password !== '') return 'must not carry a user name or password (the request is signed instead)';
  if (options.allowLinkLocal) return null;
  const host = u.hostname
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/\.$/, '');
  if (METADATA_NAMES.has(host)) return `names a cloud metadata service (${host}); set allowLinkLocal if you truly mean it`;
  if (isIP(host) !== 0) {
    const why = forbiddenAddress(host);
    if (why) return `${why}; set allowLinkLocal if you truly mean it`;
  }
  return null;
}
