// Exact decimal arithmetic with PostgreSQL `numeric` semantics, used to evaluate recorded
// reads' "where" clauses (history-format.md "where" semantics): values are BigInt-scaled
// (value = m * 10^-s, s = PostgreSQL's display scale), with NaN and +/-Infinity, the
// PostgreSQL ordering (NaN = NaN, NaN above everything), and PostgreSQL's result scales
// (numeric_add/mul keep exact scales, numeric_div uses select_div_scale and rounds half
// away from zero, numeric_mod is exact).
//
// Bounds, as PostgreSQL's (make_result): at most 131072 digits before the decimal point (weight
// <= 32767 base-10000 digits) and a display scale of at most 16383, else "value overflows numeric
// format"; input exponents beyond +/-1073741823 overflow too. Parsing never expands a huge exponent
// before checking it, multiplication refuses a product that must overflow before computing it, and
// every result is checked, so no value (and no intermediate) grows past a few hundred thousand digits.

import { SqlEvalError, charge } from './errors.js';

enum Sp {
  Finite = 0,
  PosInf = 1,
  NegInf = -1,
  NaN = 2,
}

/** PostgreSQL's limits: (NUMERIC_WEIGHT_MAX + 1) * DEC_DIGITS digits before the point, NUMERIC_DSCALE_MAX after. */
export const NUMERIC_MAX_INT_DIGITS = 131072;
export const NUMERIC_DSCALE_MAX = 16383;
/** numeric_in: larger exponents (in absolute value) overflow (PG_INT32_MAX / 2). */
const NUMERIC_MAX_EXPONENT = 1073741823;

const POW10: bigint[] = [];
for (let i = 0, p = 1n; i <= 64; i++, p *= 10n) POW10.push(p);
// larger powers, computed on demand (a few are reused: the limits, common scales)
const BIG_POW10 = new Map<number, bigint>();
const BIG_POW10_MAX = 64;
function pow10(n: number): bigint {
  if (n < POW10.length) return POW10[n]!;
  let v = BIG_POW10.get(n);
  if (v === undefined) {
    charge(n >> 4);
    v = 10n ** BigInt(n);
    if (BIG_POW10.size >= BIG_POW10_MAX) BIG_POW10.delete(BIG_POW10.keys().next().value!);
    BIG_POW10.set(n, v);
  }
  return v;
}

const P15 = 10n ** 15n;
/** Any value below this has far fewer digits than the limits. */
const SMALL = 10n ** 1000n;

/** Number of decimal digits of a >= 0 (1 for 0). Linear time (no decimal conversion of big values). */
function digitCount(a: bigint): number {
  if (a < P15) return a < 10n ? 1 : String(a).length;
  const hex = a.toString(16);
  charge(hex.length >> 2);
  const bits = hex.length * 4 - (Math.clz32(parseInt(hex[0]!, 16)) - 28);
  // 2^(bits-1) <= a < 2^bits: the digit count is this estimate or one more
  let d = Math.floor((bits - 1) * Math.LOG10E * Math.LN2) + 1;
  while (d > 1 && a < pow10(d - 1)) d--;
  while (a >= pow10(d)) d++;
  return d;
}

function overflow(): never {
  throw new SqlEvalError('value overflows numeric format');
}

/** The value itself if PostgreSQL can represent it, else "value overflows numeric format". */
function checked(d: Decimal): Decimal {
  if (d.s > NUMERIC_DSCALE_MAX) overflow();
  const a = d.m < 0n ? -d.m : d.m;
  if (a >= SMALL && digitCount(a) - d.s > NUMERIC_MAX_INT_DIGITS) overflow();
  return d;
}

/** Decimal exponent of the leading digit of a finite non-zero value. */
function exp10(d: Decimal): number {
  return digitCount(d.m < 0n ? -d.m : d.m) - 1 - d.s;
}

/** Charges the work of an operation on BigInts of these magnitudes (only big ones matter). */
function chargeBig(a: bigint, b: bigint): void {
  const x = a < 0n ? -a : a;
  const y = b < 0n ? -b : b;
  if (x >= SMALL || y >= SMALL)
    charge(((x >= SMALL ? x.toString(16).length : 0) + (y >= SMALL ? y.toString(16).length : 0)) * 4);
}

/** NUMERIC_MAX_DISPLAY_SCALE etc. from PostgreSQL's numeric.c */
const NUMERIC_MAX_DISPLAY_SCALE = 1000;
const NUMERIC_MIN_DISPLAY_SCALE = 0;
const NUMERIC_MIN_SIG_DIGITS = 16;
const DEC_DIGITS = 4;

const DECIMAL_RE = /^([+-]?)(?:(\d+(?:_\d+)*)(?:\.(\d+(?:_\d+)*)?)?|\.(\d+(?:_\d+)*))(?:[eE]([+-]?)(\d+(?:_\d+)*))?$/;
const NONDECIMAL_RE = /^([+-]?)0([xXoObB])_?([0-9a-fA-F]+(?:_[0-9a-fA-F]+)*)$/;

export class Decimal {
  /** m: unscaled value; s: display scale (>= 0); sp: 0 finite, 1 +Inf, -1 -Inf, 2 NaN */
  constructor(
    readonly m: bigint,
    readonly s: number,
    readonly sp: number = Sp.Finite,
  ) {}

  static readonly NaN = new Decimal(0n, 0, Sp.NaN);
  static readonly PosInf = new Decimal(0n, 0, Sp.PosInf);
  static readonly NegInf = new Decimal(0n, 0, Sp.NegInf);
  static readonly Zero = new Decimal(0n, 0);

  static fromBigInt(v: bigint): Decimal {
    return new Decimal(v, 0);
  }

  static fromInt(v: number): Decimal {
    return new Decimal(BigInt(v), 0);
  }

  /** Parses PostgreSQL numeric input syntax; returns undefined if invalid, throws SqlEvalError
   *  ("value overflows numeric format") for a value out of numeric's range, as numeric_in. */
  static parse(text: string): Decimal | undefined {
    const t = text.trim();
    charge(t.length);
    const m = DECIMAL_RE.exec(t);
    if (m) {
      const neg = m[1] === '-';
      const intPart = (m[2] ?? '').replace(/_/g, '');
      const fracPart = (m[3] ?? m[4] ?? '').replace(/_/g, '');
      let exp = 0;
      if (m[6] !== undefined) {
        const digits = m[6].replace(/_/g, '').replace(/^0+/, '');
        if (digits.length > 10 || Number(digits) > NUMERIC_MAX_EXPONENT) overflow();
        exp = (m[5] === '-' ? -1 : 1) * Number(digits || '0');
      }
      // value = digits * 10^-s0; PostgreSQL's display scale is max(s0, 0)
      const s0 = fracPart.length - exp;
      const dscale = Math.max(0, s0);
      if (dscale > NUMERIC_DSCALE_MAX) overflow();
      const all = intPart + fracPart;
      let lead = 0;
      while (lead < all.length && all.charCodeAt(lead) === 48) lead++;
      if (lead === all.length) return new Decimal(0n, dscale);
      // exponent of the leading digit, checked before any expansion
      if (all.length - lead - 1 - s0 >= NUMERIC_MAX_INT_DIGITS) overflow();
      let mant = BigInt(lead > 0 ? all.slice(lead) : all);
      if (s0 < 0) mant *= pow10(-s0);
      return new Decimal(neg ? -mant : mant, dscale);
    }
    const lower = t.toLowerCase();
    if (lower === 'nan') return Decimal.NaN;
    if (lower === 'infinity' || lower === '+infinity' || lower === 'inf' || lower === '+inf') return Decimal.PosInf;
    if (lower === '-infinity' || lower === '-inf') return Decimal.NegInf;
    // Non-decimal integer syntax (PostgreSQL 16+): 0x.., 0o.., 0b..
    const nd = NONDECIMAL_RE.exec(t);
    if (nd) {
      const base = nd[2]!.toLowerCase();
      const digits = nd[3]!.replace(/_/g, '').replace(/^0+(?=.)/, '');
      const re = base === 'x' ? /^[0-9a-fA-F]+$/ : base === 'o' ? /^[0-7]+$/ : /^[01]+$/;
      if (!re.test(digits)) return undefined;
      const bitsPerDigit = base === 'x' ? 4 : base === 'o' ? 3 : 1;
      // at least (digits - 1) * bitsPerDigit bits: too many decimal digits for sure?
      if ((digits.length - 1) * bitsPerDigit * Math.LOG10E * Math.LN2 >= NUMERIC_MAX_INT_DIGITS) overflow();
      const v = BigInt(`0${base}${digits}`);
      return checked(new Decimal(nd[1] === '-' ? -v : v, 0));
    }
    return undefined;
  }

  get isNaN(): boolean {
    return this.sp === Sp.NaN;
  }
  get isFinite(): boolean {
    return this.sp === Sp.Finite;
  }

  /** PostgreSQL numeric_out */
  toString(): string {
    if (this.sp !== Sp.Finite) return this.sp === Sp.NaN ? 'NaN' : this.sp === Sp.PosInf ? 'Infinity' : '-Infinity';
    const neg = this.m < 0n;
    const a = (neg ? -this.m : this.m).toString();
    if (a.length > 1000) charge(a.length * 4); // decimal conversion of a big value: quadratic-ish
    let out: string;
    if (this.s === 0) out = a;
    else {
      const padded = a.length <= this.s ? '0'.repeat(this.s - a.length + 1) + a : a;
      out = `${padded.slice(0, padded.length - this.s)}.${padded.slice(padded.length - this.s)}`;
    }
    return neg ? `-${out}` : out;
  }

  /** Canonical text: equal values give equal strings (trailing fractional zeros removed). */
  canonical(): string {
    if (this.sp !== Sp.Finite) return this.toString();
    if (this.m === 0n) return '0';
    if (this.s === 0 || this.m % 10n !== 0n) return this.toString();
    const str = this.toString(); // has a '.' and this.s fractional digits
    let n = str.length;
    while (str.charCodeAt(n - 1) === 48) n--;
    if (str.charCodeAt(n - 1) === 46) n--;
    return str.slice(0, n);
  }

  sign(): number {
    if (this.sp === Sp.NaN) return NaN;
    if (this.sp !== Sp.Finite) return this.sp;
    return this.m > 0n ? 1 : this.m < 0n ? -1 : 0;
  }

  isInteger(): boolean {
    return this.sp === Sp.Finite && (this.s === 0 || this.m % pow10(this.s) === 0n);
  }

  /** Integer value (exact; caller checks isInteger or wants truncation toward zero). */
  truncToBigInt(): bigint {
    return this.s === 0 ? this.m : this.m / pow10(this.s);
  }

  toNumber(): number {
    if (this.sp !== Sp.Finite) return this.sp === Sp.NaN ? NaN : this.sp === Sp.PosInf ? Infinity : -Infinity;
    if (this.s === 0 && this.m >= -9007199254740991n && this.m <= 9007199254740991n) return Number(this.m);
    if (this.m >= SMALL || -this.m >= SMALL) {
      // far outside the range of doubles: no decimal conversion of hundreds of thousands of digits
      const e = exp10(this);
      if (e > 400) return this.m < 0n ? -Infinity : Infinity;
      if (e < -400) return this.m < 0n ? -0 : 0;
    }
    return Number(this.toString());
  }

  /** Converts a float8 like PostgreSQL's float8_numeric (DBL_DIG = 15 significant digits) or
   *  float4_numeric (FLT_DIG = 6). */
  static fromFloat(v: number, digits: number): Decimal {
    if (Number.isNaN(v)) return Decimal.NaN;
    if (v === Infinity) return Decimal.PosInf;
    if (v === -Infinity) return Decimal.NegInf;
    let t = v.toPrecision(digits);
    // %g strips trailing zeros of the fraction
    const ei = t.indexOf('e');
    let mant = ei >= 0 ? t.slice(0, ei) : t;
    const exp = ei >= 0 ? t.slice(ei) : '';
    if (mant.includes('.')) mant = mant.replace(/0+$/, '').replace(/\.$/, '');
    t = mant + exp;
    return Decimal.parse(t)!;
  }

  static cmp(a: Decimal, b: Decimal): number {
    if (a.sp !== Sp.Finite || b.sp !== Sp.Finite) {
      const ra = a.sp === Sp.NaN ? 3 : a.sp === Sp.PosInf ? 2 : a.sp === Sp.NegInf ? 0 : 1;
      const rb = b.sp === Sp.NaN ? 3 : b.sp === Sp.PosInf ? 2 : b.sp === Sp.NegInf ? 0 : 1;
      if (ra !== rb || ra !== 1) return ra < rb ? -1 : ra > rb ? 1 : 0;
    }
    let x = a.m;
    let y = b.m;
    if (a.s !== b.s) {
      if (a.s < b.s) x *= pow10(b.s - a.s);
      else y *= pow10(a.s - b.s);
    }
    return x < y ? -1 : x > y ? 1 : 0;
  }

  static eq(a: Decimal, b: Decimal): boolean {
    if (a.s === b.s && a.sp === Sp.Finite && b.sp === Sp.Finite) return a.m === b.m;
    return Decimal.cmp(a, b) === 0;
  }

  neg(): Decimal {
    if (this.sp !== Sp.Finite)
      return this.sp === Sp.NaN ? this : this.sp === Sp.PosInf ? Decimal.NegInf : Decimal.PosInf;
    return new Decimal(-this.m, this.s);
  }

  static add(a: Decimal, b: Decimal): Decimal {
    if (a.sp !== Sp.Finite || b.sp !== Sp.Finite) {
      if (a.sp === Sp.NaN || b.sp === Sp.NaN) return Decimal.NaN;
      if (a.sp !== Sp.Finite && b.sp !== Sp.Finite) return a.sp === b.sp ? a : Decimal.NaN;
      return a.sp !== Sp.Finite ? a : b;
    }
    chargeBig(a.m, b.m);
    if (a.s === b.s) return checked(new Decimal(a.m + b.m, a.s));
    if (a.s < b.s) return checked(new Decimal(a.m * pow10(b.s - a.s) + b.m, b.s));
    return checked(new Decimal(a.m + b.m * pow10(a.s - b.s), a.s));
  }

  static sub(a: Decimal, b: Decimal): Decimal {
    return Decimal.add(a, b.neg());
  }

  static mul(a: Decimal, b: Decimal): Decimal {
    if (a.sp !== Sp.Finite || b.sp !== Sp.Finite) {
      if (a.sp === Sp.NaN || b.sp === Sp.NaN) return Decimal.NaN;
      const sa = a.sign();
      const sb = b.sign();
      if (sa === 0 || sb === 0) return Decimal.NaN; // Inf * 0
      return sa * sb > 0 ? Decimal.PosInf : Decimal.NegInf;
    }
    // numeric_mul: the exact product, rounded to NUMERIC_DSCALE_MAX fractional digits if it has more
    const s = a.s + b.s;
    if (a.m === 0n || b.m === 0n) return new Decimal(0n, Math.min(s, NUMERIC_DSCALE_MAX));
    const ax = a.m < 0n ? -a.m : a.m;
    const bx = b.m < 0n ? -b.m : b.m;
    // the product's leading digit has exponent exp10(a) + exp10(b) or one more: refuse before computing
    if ((ax >= SMALL || bx >= SMALL) && exp10(a) + exp10(b) >= NUMERIC_MAX_INT_DIGITS) overflow();
    chargeBig(a.m, b.m);
    const r = new Decimal(a.m * b.m, s);
    return checked(s > NUMERIC_DSCALE_MAX ? r.round(NUMERIC_DSCALE_MAX) : r);
  }

  /** Base-10000 weight and first digit, as PostgreSQL's select_div_scale sees them. */
  private weightAndFirstDigit(): [number, bigint] {
    if (this.m === 0n) return [0, 0n];
    const a = this.m < 0n ? -this.m : this.m;
    const e = digitCount(a) - 1 - this.s; // decimal exponent of the leading digit
    const weight = Math.floor(e / DEC_DIGITS);
    const shift = this.s + DEC_DIGITS * weight;
    const first = shift >= 0 ? a / pow10(shift) : a * pow10(-shift);
    return [weight, first];
  }

  static div(a: Decimal, b: Decimal): Decimal {
    if (a.sp !== Sp.Finite || b.sp !== Sp.Finite) {
      if (a.sp === Sp.NaN || b.sp === Sp.NaN) return Decimal.NaN;
      if (a.sp !== Sp.Finite) {
        if (b.sp !== Sp.Finite) return Decimal.NaN;
        const sb = b.sign();
        if (sb === 0) throw new SqlEvalError('division by zero');
        return a.sp * sb > 0 ? Decimal.PosInf : Decimal.NegInf;
      }
      return Decimal.Zero;
    }
    if (b.m === 0n) throw new SqlEvalError('division by zero');
    // select_div_scale
    const [w1, f1] = a.weightAndFirstDigit();
    const [w2, f2] = b.weightAndFirstDigit();
    let qweight = w1 - w2;
    if (f1 <= f2) qweight--;
    let rscale = NUMERIC_MIN_SIG_DIGITS - qweight * DEC_DIGITS;
    rscale = Math.max(rscale, a.s, b.s, NUMERIC_MIN_DISPLAY_SCALE);
    rscale = Math.min(rscale, NUMERIC_MAX_DISPLAY_SCALE);
    // the quotient's leading digit has exponent exp10(a) - exp10(b) or one less: refuse before computing
    if ((a.m >= SMALL || -a.m >= SMALL) && exp10(a) - exp10(b) - 1 >= NUMERIC_MAX_INT_DIGITS) overflow();
    chargeBig(a.m, b.m);
    return checked(Decimal.divRound(a, b, rscale));
  }

  /** a / b rounded half away from zero to `rscale` fractional digits (b finite non-zero). */
  static divRound(a: Decimal, b: Decimal, rscale: number): Decimal {
    const neg = a.m < 0n !== b.m < 0n;
    const x = a.m < 0n ? -a.m : a.m;
    const y = b.m < 0n ? -b.m : b.m;
    // (x / 10^a.s) / (y / 10^b.s) * 10^rscale = x * 10^(b.s + rscale) / (y * 10^a.s)
    let num = x;
    let den = y;
    const e = b.s + rscale - a.s;
    if (e >= 0) num *= pow10(e);
    else den *= pow10(-e);
    let q = num / den;
    const r = num - q * den;
    if (r * 2n >= den) q += 1n;
    return new Decimal(neg ? -q : q, rscale);
  }

  static mod(a: Decimal, b: Decimal): Decimal {
    if (a.sp !== Sp.Finite || b.sp !== Sp.Finite) {
      if (a.sp === Sp.NaN || b.sp === Sp.NaN) return Decimal.NaN;
      if (a.sp !== Sp.Finite) {
        if (b.sp === Sp.Finite && b.m === 0n) throw new SqlEvalError('division by zero');
        return Decimal.NaN;
      }
      return a;
    }
    if (b.m === 0n) throw new SqlEvalError('division by zero');
    chargeBig(a.m, b.m);
    const s = Math.max(a.s, b.s);
    const x = a.m * pow10(s - a.s);
    const y = b.m * pow10(s - b.s);
    return new Decimal(x % y, s);
  }

  /** Rounds (half away from zero) or extends to exactly `scale` fractional digits. */
  round(scale: number): Decimal {
    if (this.sp !== Sp.Finite) return this;
    if (scale >= this.s) return new Decimal(this.m * pow10(scale - this.s), scale);
    const d = pow10(this.s - scale);
    const neg = this.m < 0n;
    const a = neg ? -this.m : this.m;
    let q = a / d;
    if ((a - q * d) * 2n >= d) q += 1n;
    return new Decimal(neg ? -q : q, scale);
  }

  /** Integer nearest to the value, ties away from zero (numeric -> int casts). */
  roundToBigInt(): bigint {
    return this.round(0).m;
  }

  /** Applies a numeric(precision, scale) typmod like PostgreSQL's apply_typmod. */
  applyTypmod(precision: number, scale: number): Decimal {
    if (this.sp === Sp.NaN) return this;
    if (this.sp !== Sp.Finite)
      throw new SqlEvalError(`numeric field overflow: cannot hold an infinite value in numeric(${precision},${scale})`);
    const r = this.round(scale);
    const a = r.m < 0n ? -r.m : r.m;
    // integer digits must fit in precision - scale
    if (a >= pow10(precision)) {
      throw new SqlEvalError(`numeric field overflow: ${this.toString()} does not fit numeric(${precision},${scale})`);
    }
    return r;
  }
}
