/**
 * Bit strings in binary format (PostgreSQL's bit_send / varbit_send, utils/adt/varbit.c), for the proxy's
 * conversion of results and parameters (formats.ts): int32 the number of bits, then the bits, most significant
 * first, the last byte padded with zeros. Their text is the bits: `10110`.
 */

export function bitsToBinary(text: string): Buffer | undefined {
  if (!/^[01]*$/.test(text)) return undefined;
  const b = Buffer.alloc(4 + Math.ceil(text.length / 8));
  b.writeInt32BE(text.length);
  for (let i = 0; i < text.length; i++) if (text[i] === '1') b[4 + (i >> 3)] |= 0x80 >> (i & 7);
  return b;
}

export function bitsFromBinary(b: Buffer): string {
  const n = b.readInt32BE(0);
  let out = '';
  for (let i = 0; i < n; i++) out += b[4 + (i >> 3)] & (0x80 >> (i & 7)) ? '1' : '0';
  return out;
}
