/**
 * numeric in binary format (PostgreSQL's numeric_send / numeric_recv, utils/adt/numeric.c), for the proxy's
 * conversion of results and parameters (formats.ts): int16 ndigits, int16 weight, int16 sign, int16 dscale, then
 * ndigits base-10000 digits, most significant first; the value is the sum of digit[i] * 10000^(weight - i).
 * What the server sends is stripped of leading and trailing zero digits (zero: no digit, weight 0), and dscale is
 * the number of decimal digits after the point in its text.
 */

const POS = 0x0000,
  NEG = 0x4000,
  NAN = 0xc000,
  PINF = 0xd000,
  NINF = 0xf000;

const NUMERIC_TEXT = /^(-)?(\d+)(?:\.(\d+))?$/;

function header(ndigits: number, weight: number, sign: number, dscale: number): Buffer {
  const b = Buffer.alloc(8 + 2 * ndigits);
  b.writeInt16BE(ndigits, 0);
  b.writeInt16BE(weight, 2);
  b.writeUInt16BE(sign, 4);
  b.writeInt16BE(dscale, 6);
  return b;
}

/** numeric's text (as the server prints it: no exponent) in binary; undefined when it is not such a text. */
export function numericToBinary(text: string): Buffer | undefined {
  if (text === 'NaN') return header(0, 0, NAN, 0);
  // (the server's dscale of an infinity is what its header's bits read as one: 32)
  if (text === 'Infinity') return header(0, 0, PINF, 32);
  if (text === '-Infinity') return header(0, 0, NINF, 32);
  const m = NUMERIC_TEXT.exec(text);
  if (!m) return undefined;
  const int = m[2];
  const frac = m[3] ?? '';
  // groups of 4 decimal digits aligned on the point: the integer part padded on the left, the fraction on the right
  const intPadded = int.padStart(Math.ceil(int.length / 4) * 4, '0');
  const fracPadded = frac.padEnd(Math.ceil(frac.length / 4) * 4, '0');
  const digits: number[] = [];
  for (let i = 0; i < intPadded.length; i += 4) digits.push(Number(intPadded.slice(i, i + 4)));
  let weight = digits.length - 1;
  for (let i = 0; i < fracPadded.length; i += 4) digits.push(Number(fracPadded.slice(i, i + 4)));
  let first = 0;
  while (first < digits.length && digits[first] === 0) {
    first++;
    weight--;
  }
  let last = digits.length;
  while (last > first && digits[last - 1] === 0) last--;
  const kept = digits.slice(first, last);
  if (kept.length === 0) return header(0, 0, POS, frac.length);
  const b = header(kept.length, weight, m[1] ? NEG : POS, frac.length);
  for (let i = 0; i < kept.length; i++) b.writeInt16BE(kept[i], 8 + 2 * i);
  return b;
}

/** A binary numeric (as a client sends it: maybe not stripped) as the text the server reads. */
export function numericFromBinary(b: Buffer): string {
  const ndigits = b.readInt16BE(0);
  const weight = b.readInt16BE(2);
  const sign = b.readUInt16BE(4);
  const dscale = b.readInt16BE(6);
  if (sign === NAN) return 'NaN';
  if (sign === PINF) return 'Infinity';
  if (sign === NINF) return '-Infinity';
  const digit = (i: number): number => (i >= 0 && i < ndigits ? b.readInt16BE(8 + 2 * i) : 0);
  let int = '';
  for (let i = 0; i <= weight; i++) int += i === 0 ? String(digit(i)) : String(digit(i)).padStart(4, '0');
  if (int === '') int = '0';
  else int = int.replace(/^0+(?=\d)/, '');
  let frac = '';
  for (let i = weight + 1; frac.length < dscale; i++) frac += String(digit(i)).padStart(4, '0');
  frac = frac.slice(0, dscale);
  const neg = sign === NEG && /[1-9]/.test(int + frac);
  return `${neg ? '-' : ''}${int}${dscale > 0 ? `.${frac}` : ''}`;
}
