// Exact decimal arithmetic with PostgreSQL `numeric` semantics, used to evaluate recorded
// reads' "where" clauses (history-format.md "where" semantics): values are BigInt-scaled
// (value = m * 10^-s, s = PostgreSQL's display scale), with NaN and +/-Infinity, the
// PostgreSQL ordering (NaN = NaN, NaN above everything), and PostgreSQL's result scales
// (numeric_add/mul keep exact scales, numeric_div uses select_div_scale and rounds half
// away from zero, numeric_mod is exact).

import { EvalError } from './errors.js';

const enum Sp {
  Finite = 0,
  PosInf = 1,
  NegInf = -1,
  NaN = 2,
}

const POW10: bigint[] = [];
for (let i = 0, p = 1n; i <= 64; i++, p *= 10n) POW10.push(p);
export function pow10(n: number): bigint {
  return n < POW10.length ? POW10[n]! : 10n ** BigInt(n);
}

function digitCount(a: bigint): number {
  // a >= 0
  if (a < 10n) return 1;
  const s = a.toString();
  return s.length;
}

/** NUMERIC_MAX_DISPLAY_SCALE etc. from PostgreSQL's numeric.c */
const NUMERIC_MAX_DISPLAY_SCALE = 1000;
const NUMERIC_MIN_DISPLAY_SCALE = 0;
const NUMERIC_MIN_SIG_DIGITS = 16;
const DEC_DIGITS = 4;

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

  /** Parses PostgreSQL numeric input syntax; returns undefined if invalid. */
  static parse(text: string): Decimal | undefined {
    const t = text.trim();
    const m = /^([+-]?)(?:(\d+(?:_\d+)*)(?:\.(\d+(?:_\d+)*)?)?|\.(\d+(?:_\d+)*))(?:[eE]([+-]?\d+))?$/.exec(t);
    if (m) {
      const neg = m[1] === '-';
      const intPart = (m[2] ?? '').replace(/_/g, '');
      const fracPart = (m[3] ?? m[4] ?? '').replace(/_/g, '');
      const exp = m[5] === undefined ? 0 : Number(m[5]);
      if (!Number.isFinite(exp) || Math.abs(exp) > 100000) return undefined;
      let mant = BigInt((intPart + fracPart) || '0');
      let s = fracPart.length - exp;
      if (s < 0) {
        mant *= pow10(-s);
        s = 0;
      }
      if (s > NUMERIC_MAX_DISPLAY_SCALE) return undefined;
      return new Decimal(neg ? -mant : mant, s);
    }
    const lower = t.toLowerCase();
    if (lower === 'nan') return Decimal.NaN;
    if (lower === 'infinity' || lower === '+infinity' || lower === 'inf' || lower === '+inf') return Decimal.PosInf;
    if (lower === '-infinity' || lower === '-inf') return Decimal.NegInf;
    // Non-decimal integer syntax (PostgreSQL 16+): 0x.., 0o.., 0b..
    const nd = /^([+-]?)0([xXoObB])([0-9a-fA-F]+(?:_[0-9a-fA-F]+)*)$/.exec(t);
    if (nd) {
      const base = nd[2]!.toLowerCase();
      const digits = nd[3]!.replace(/_/g, '');
      const re = base === 'x' ? /^[0-9a-fA-F]+$/ : base === 'o' ? /^[0-7]+$/ : /^[01]+$/;
      if (!re.test(digits)) return undefined;
      const v = BigInt('0' + base + digits);
      return new Decimal(nd[1] === '-' ? -v : v, 0);
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
    let out: string;
    if (this.s === 0) out = a;
    else {
      const padded = a.length <= this.s ? '0'.repeat(this.s - a.length + 1) + a : a;
      out = padded.slice(0, padded.length - this.s) + '.' + padded.slice(padded.length - this.s);
    }
    return neg ? '-' + out : out;
  }

  /** Canonical text: equal values give equal strings (trailing fractional zeros removed). */
  canonical(): string {
    if (this.sp !== Sp.Finite) return this.toString();
    if (this.m === 0n) return '0';
    let m = this.m;
    let s = this.s;
    while (s > 0 && m % 10n === 0n) {
      m /= 10n;
      s--;
    }
    return new Decimal(m, s).toString();
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
    if (this.sp !== Sp.Finite) return this.sp === Sp.NaN ? this : this.sp === Sp.PosInf ? Decimal.NegInf : Decimal.PosInf;
    return new Decimal(-this.m, this.s);
  }

  static add(a: Decimal, b: Decimal): Decimal {
    if (a.sp !== Sp.Finite || b.sp !== Sp.Finite) {
      if (a.sp === Sp.NaN || b.sp === Sp.NaN) return Decimal.NaN;
      if (a.sp !== Sp.Finite && b.sp !== Sp.Finite) return a.sp === b.sp ? a : Decimal.NaN;
      return a.sp !== Sp.Finite ? a : b;
    }
    if (a.s === b.s) return new Decimal(a.m + b.m, a.s);
    if (a.s < b.s) return new Decimal(a.m * pow10(b.s - a.s) + b.m, b.s);
    return new Decimal(a.m + b.m * pow10(a.s - b.s), a.s);
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
    const s = a.s + b.s;
    const r = new Decimal(a.m * b.m, s);
    return s > NUMERIC_MAX_DISPLAY_SCALE ? r.round(NUMERIC_MAX_DISPLAY_SCALE) : r;
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
        if (sb === 0) throw new EvalError('division by zero');
        return a.sp * sb > 0 ? Decimal.PosInf : Decimal.NegInf;
      }
      return Decimal.Zero;
    }
    if (b.m === 0n) throw new EvalError('division by zero');
    // select_div_scale
    const [w1, f1] = a.weightAndFirstDigit();
    const [w2, f2] = b.weightAndFirstDigit();
    let qweight = w1 - w2;
    if (f1 <= f2) qweight--;
    let rscale = NUMERIC_MIN_SIG_DIGITS - qweight * DEC_DIGITS;
    rscale = Math.max(rscale, a.s, b.s, NUMERIC_MIN_DISPLAY_SCALE);
    rscale = Math.min(rscale, NUMERIC_MAX_DISPLAY_SCALE);
    return Decimal.divRound(a, b, rscale);
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
        if (b.sp === Sp.Finite && b.m === 0n) throw new EvalError('division by zero');
        return Decimal.NaN;
      }
      return a;
    }
    if (b.m === 0n) throw new EvalError('division by zero');
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
    if (this.sp !== Sp.Finite) throw new EvalError(`numeric field overflow: cannot hold an infinite value in numeric(${precision},${scale})`);
    const r = this.round(scale);
    const a = r.m < 0n ? -r.m : r.m;
    // integer digits must fit in precision - scale
    if (a >= pow10(precision)) {
      throw new EvalError(`numeric field overflow: ${this.toString()} does not fit numeric(${precision},${scale})`);
    }
    return r;
  }
}
