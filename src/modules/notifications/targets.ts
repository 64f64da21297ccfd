import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

/**
 * Addresses no notification may reach (CONTRACT.md section 7): loopback, private (RFC 1918,
 * `fc00::/7`), link-local (`169.254.0.0/16` with the cloud metadata address, `fe80::/10`), CGNAT
 * (`100.64.0.0/10`), unspecified and multicast; `0.0.0.0/8` whole (it reaches this host).
 * Node's BlockList also matches IPv4-mapped IPv6 (`::ffff:127.0.0.1`) against the IPv4 rules.
 */
const REFUSED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
  ['224.0.0.0', 4],
  ['255.255.255.255', 32],
] as const) {
  REFUSED.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  REFUSED.addSubnet(net, prefix, 'ipv6');
}

export const PRIVATE_TARGET = 'url must not point to a private or local address';

/** Whether an IP address (v4 or v6, no brackets) is one notifications must not reach. */
export function isRefusedAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return REFUSED.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** The host of a parsed URL as an address or name (IPv6 brackets removed). */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/**
 * Every address `host` stands for: itself when it is a literal (WHATWG URL parsing has already
 * normalized decimal, octal and hex IPv4 forms), else what the resolver answers.
 */
export async function addressesOf(host: string): Promise<{ address: string; family: number }[]> {
  const family = isIP(host);
  if (family !== 0) return [{ address: host, family }];
  return lookup(host, { all: true, verbatim: true });
}
