/**
 * Network addresses in binary format (PostgreSQL's inet_send / cidr_send, macaddr_send, macaddr8_send;
 * utils/adt/network.c, mac.c), for the proxy's conversion of results and parameters (formats.ts):
 *
 *   inet, cidr  byte family (2: IPv4, 3: IPv6), byte netmask bits, byte is_cidr, byte address length (4, 16), the
 *               address
 *   macaddr     6 bytes; macaddr8: 8 bytes
 *
 * Text as the server prints it: `192.168.0.1/24` (an inet's /32 or /128 left out), `2001:db8::1`, `::ffff:1.2.3.4`,
 * `08:00:2b:01:02:03`. Parameters are given as text the server reads: IPv6 uncompressed.
 */

const AF_INET = 2;
const AF_INET6 = 3;

/** The 4 bytes of a dotted IPv4 address, or undefined. */
function ipv4(text: string): number[] | undefined {
  const parts = text.split('.');
  if (parts.length !== 4 || parts.some((p) => !/^\d{1,3}$/.test(p) || Number(p) > 255)) return undefined;
  return parts.map(Number);
}

/** The 16 bytes of an IPv6 address (`::` compression, an IPv4 tail), or undefined. */
function ipv6(text: string): number[] | undefined {
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groups = (s: string): number[] | undefined => {
    if (s === '') return [];
    const out: number[] = [];
    const parts = s.split(':');
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (i === parts.length - 1 && p.includes('.')) {
        const v4 = ipv4(p);
        if (!v4) return undefined;
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else if (/^[0-9a-f]{1,4}$/i.test(p)) out.push(Number.parseInt(p, 16));
      else return undefined;
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (!head || !tail) return undefined;
  const fill = 8 - head.length - tail.length;
  if (halves.length === 2 ? fill < 1 : fill !== 0) return undefined;
  const all = [...head, ...new Array<number>(fill).fill(0), ...tail];
  return all.flatMap((g) => [g >> 8, g & 0xff]);
}

/** inet (cidr false) or cidr (true), as the server prints it, in binary. */
export function inetToBinary(text: string, cidr: boolean): Buffer | undefined {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const v4 = address.includes(':') ? undefined : ipv4(address);
  const bytes = v4 ?? ipv6(address);
  if (!bytes) return undefined;
  const max = v4 ? 32 : 128;
  const bits = slash < 0 ? max : Number(text.slice(slash + 1));
  if (!Number.isInteger(bits) || bits < 0 || bits > max) return undefined;
  return Buffer.from([v4 ? AF_INET : AF_INET6, bits, cidr ? 1 : 0, bytes.length, ...bytes]);
}

/** A binary inet or cidr as text the server reads (IPv6 uncompressed; the netmask always given). */
export function inetFromBinary(b: Buffer): string {
  const family = b[0];
  const bits = b[1];
  const n = b[3];
  const addr = b.subarray(4, 4 + n);
  if (family === AF_INET) return `${[...addr].join('.')}/${bits}`;
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((addr[i] << 8) | addr[i + 1]).toString(16));
  return `${groups.join(':')}/${bits}`;
}

/** macaddr (6 bytes) or macaddr8 (8) as the server prints it, in binary. */
export function macToBinary(text: string, size: number): Buffer | undefined {
  const parts = text.split(':');
  if (parts.length !== size || parts.some((p) => !/^[0-9a-f]{2}$/i.test(p))) return undefined;
  return Buffer.from(parts.map((p) => Number.parseInt(p, 16)));
}

export const macFromBinary = (b: Buffer): string => [...b].map((x) => x.toString(16).padStart(2, '0')).join(':');
