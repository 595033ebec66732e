/**
 * Exact money for workloads: decimal strings <-> bigint counts of 10^-scale units (cents by default). PostgreSQL
 * numeric values arrive as strings from pg; arithmetic on them is done here or in SQL, never with JS floats.
 */

/** Parses a decimal string ("-12.3", "7", "0.05") into units of 10^-scale; more fractional digits are an error. */
export function toUnits(text: string | number, scale = 2): bigint {
  const s = typeof text === 'number' ? String(text) : text.trim();
  const m = /^([+-])?(\d+)(?:\.(\d*))?$/.exec(s);
  if (!m) throw new Error(`not a decimal number: ${JSON.stringify(text)}`);
  const frac = (m[3] ?? '').replace(/0+$/, '');
  if (frac.length > scale) throw new Error(`${s} has more than ${scale} decimals`);
  const units = BigInt(m[2] + frac.padEnd(scale, '0'));
  return m[1] === '-' ? -units : units;
}

/** Formats units of 10^-scale as a decimal string with exactly `scale` decimals. */
export function fromUnits(units: bigint, scale = 2): string {
  const neg = units < 0n;
  const digits = (neg ? -units : units).toString().padStart(scale + 1, '0');
  const int = digits.slice(0, digits.length - scale);
  const frac = digits.slice(digits.length - scale);
  return (neg ? '-' : '') + int + (scale > 0 ? `.${frac}` : '');
}

/** Sum of decimal strings, as a decimal string with `scale` decimals. */
export function sumDecimals(values: Array<string | number>, scale = 2): string {
  return fromUnits(
    values.reduce<bigint>((acc, v) => acc + toUnits(v, scale), 0n),
    scale,
  );
}
