// IPv4 addresses as numbers, for address arithmetic (loopback addresses of local nodes, the Janus
// nodes' subnet). Validation is node:net's isIPv4 (dotted decimal only).
export { isIPv4 } from 'node:net';

export function ipToInt(ip: string): number {
  return ip.split('.').reduce((acc, part) => acc * 256 + Number(part), 0);
}

export function intToIp(n: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(n / 2 ** shift) % 256).join('.');
}
