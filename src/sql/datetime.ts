// PostgreSQL date / timestamp / timestamptz values for the evaluation of recorded reads'
// "where" clauses (history-format.md "where" semantics): ISO input (as PostgreSQL outputs it
// with DateStyle ISO, plus the common 'T'/'Z' variants), output, and a comparable internal form.
//  - date: number of days since 1970-01-01 (proleptic Gregorian), +/-Infinity for 'infinity'.
//  - timestamp / timestamptz: bigint microseconds since 1970-01-01 00:00 (UTC for timestamptz),
//    TS_NEG_INF / TS_POS_INF for '-infinity' / 'infinity'.
// The session TimeZone is taken to be UTC (input without an offset, date/timestamp <-> timestamptz
// conversions, timestamptz output).

import { SqlEvalError, PredicateError, clip } from './errors.js';

const US_PER_DAY = 86_400_000_000n;
const PG_EPOCH_US = 946_684_800_000_000n;
const TS_NEG_INF = -(2n ** 63n);
const TS_POS_INF = 2n ** 63n - 1n;

function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

function civilFromDays(z: number): [number, number, number] {
  z += 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

function isLeap(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}
const MDAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

// Valid ranges (PostgreSQL: dates 4714-11-24 BC .. 5874897-12-31, timestamps up to 294276 AD)
const MIN_DAY = daysFromCivil(-4713, 11, 24);
const MAX_DATE_DAY = daysFromCivil(5874897, 12, 31);
const END_TS_DAY = daysFromCivil(294277, 1, 1);
const MIN_TS_US = BigInt(MIN_DAY) * US_PER_DAY;
const END_TS_US = BigInt(END_TS_DAY) * US_PER_DAY;

interface ParsedDateTime {
  special?: 1 | -1;
  days: number;
  /** microseconds since midnight (may be 86400e6 for 24:00:00) */
  us: number;
  /** offset east of UTC in seconds, undefined if none given */
  offset?: number;
}

const DT_RE = new RegExp(
  String.raw`^(\d{4,})-(\d{1,2})-(\d{1,2})(?:(?:T|\s+)(\d{1,2}):(\d{1,2})(?::(\d{1,2})(?:\.(\d*))?)?)?` + // date, time
    String.raw`\s*(Z|UTC|GMT|[+-]\d{1,2}(?::?\d{2}(?::?\d{2})?)?)?(?:\s+(BC|AD))?$`, // zone, era
  'i',
);

function rint(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/** Longer inputs are not parsed (PostgreSQL's own limit is MAXDATELEN = 128 characters of fields). */
const MAX_DATETIME_TEXT = 256;

function parseDateTime(text: string, what: string): ParsedDateTime {
  const t = text.trim();
  if (t.length > MAX_DATETIME_TEXT) {
    throw new PredicateError(
      `unsupported ${what} input format "${clip(text, 60)}" (longer than ${MAX_DATETIME_TEXT} characters)`,
    );
  }
  const lower = t.toLowerCase();
  if (lower === 'infinity' || lower === '+infinity') return { special: 1, days: 0, us: 0 };
  if (lower === '-infinity') return { special: -1, days: 0, us: 0 };
  if (lower === 'epoch') return { days: 0, us: 0, offset: 0 };
  const m = DT_RE.exec(t);
  if (!m) {
    if (/^(now|today|tomorrow|yesterday|allballs)$/.test(lower)) {
      throw new PredicateError(`${what} input "${clip(text)}" depends on the current time and cannot be evaluated`);
    }
    throw new PredicateError(
      `unsupported ${what} input format "${clip(text)}" (only ISO 8601 "YYYY-MM-DD[ ` +
        `HH:MM[:SS[.ffffff]]][offset][ BC]" is supported)`,
    );
  }
  let year = Number(m[1]);
  const month = Number(m[2]);
  const day = Number(m[3]);
  // PostgreSQL reads fields as int32: a larger year is a field overflow
  if (year === 0 || year > 2147483647) throw new SqlEvalError(`date/time field value out of range: "${clip(text)}"`);
  if (m[9] && m[9].toUpperCase() === 'BC') year = 1 - year;
  if (month < 1 || month > 12) throw new SqlEvalError(`date/time field value out of range: "${clip(text)}"`);
  const mdays = month === 2 && isLeap(year) ? 29 : MDAYS[month - 1]!;
  if (day < 1 || day > mdays) throw new SqlEvalError(`date/time field value out of range: "${clip(text)}"`);
  const days = daysFromCivil(year, month, day);
  let us = 0;
  if (m[4] !== undefined) {
    const h = Number(m[4]);
    const mi = Number(m[5]);
    const s = m[6] === undefined ? 0 : Number(m[6]);
    const fracDigits = m[7] ?? '';
    const fsec = fracDigits === '' ? 0 : rint(Number(`0.${fracDigits}`) * 1e6);
    if (h > 24 || mi > 59 || s > 60 || (h === 24 && (mi !== 0 || s !== 0 || fsec !== 0))) {
      throw new SqlEvalError(`date/time field value out of range: "${clip(text)}"`);
    }
    us = ((h * 60 + mi) * 60 + s) * 1e6 + fsec;
  }
  let offset: number | undefined;
  const z = m[8];
  if (z !== undefined) {
    const zu = z.toUpperCase();
    if (zu === 'Z' || zu === 'UTC' || zu === 'GMT') offset = 0;
    else {
      const om = /^([+-])(\d{1,2})(?::?(\d{2})(?::?(\d{2}))?)?$/.exec(z)!;
      const oh = Number(om[2]);
      const omin = om[3] === undefined ? 0 : Number(om[3]);
      const osec = om[4] === undefined ? 0 : Number(om[4]);
      if (oh > 15 || omin > 59 || osec > 59)
        throw new SqlEvalError(`time zone displacement out of range: "${clip(text)}"`);
      offset = (om[1] === '-' ? -1 : 1) * (oh * 3600 + omin * 60 + osec);
    }
  }
  return { days, us, offset };
}

// Fast paths for the exact forms PostgreSQL outputs (ISO DateStyle): 'YYYY-MM-DD' and
// 'YYYY-MM-DD HH:MM:SS[.ffffff][+HH[:MM]]' (AD, 4-digit years); anything else takes the general path.

function dig(s: string, i: number): number {
  const c = s.charCodeAt(i) - 48;
  return c >= 0 && c <= 9 ? c : NaN;
}

function fastYmd(s: string): number | undefined {
  if (s.charCodeAt(4) !== 45 || s.charCodeAt(7) !== 45) return undefined;
  const y = dig(s, 0) * 1000 + dig(s, 1) * 100 + dig(s, 2) * 10 + dig(s, 3);
  const m = dig(s, 5) * 10 + dig(s, 6);
  const d = dig(s, 8) * 10 + dig(s, 9);
  if (!(y >= 1) || !(m >= 1 && m <= 12) || !(d >= 1)) return undefined;
  if (d > (m === 2 && isLeap(y) ? 29 : MDAYS[m - 1]!)) return undefined;
  return daysFromCivil(y, m, d);
}

/** microseconds since 1970 (offset applied if withTz), or undefined */
function fastTimestamp(s: string, withTz: boolean): bigint | undefined {
  const n = s.length;
  if (n < 19 || s.charCodeAt(10) !== 32 || s.charCodeAt(13) !== 58 || s.charCodeAt(16) !== 58) return undefined;
  const days = fastYmd(s);
  if (days === undefined) return undefined;
  const h = dig(s, 11) * 10 + dig(s, 12);
  const mi = dig(s, 14) * 10 + dig(s, 15);
  const sec = dig(s, 17) * 10 + dig(s, 18);
  if (!(h <= 23 && mi <= 59 && sec <= 59)) return undefined;
  let i = 19;
  let frac = 0;
  if (i < n && s.charCodeAt(i) === 46) {
    i++;
    let scale = 100000;
    const start = i;
    while (i < n && i - start < 6) {
      const c = dig(s, i);
      if (Number.isNaN(c)) break;
      frac += c * scale;
      scale /= 10;
      i++;
    }
    if (i === start || (i < n && !Number.isNaN(dig(s, i)))) return undefined; // none, or > 6 digits
  }
  let offset = 0;
  if (i < n) {
    const sign = s.charCodeAt(i);
    if (sign !== 43 && sign !== 45) return undefined;
    const oh = dig(s, i + 1) * 10 + dig(s, i + 2);
    let om = 0;
    if (n === i + 6 && s.charCodeAt(i + 3) === 58) om = dig(s, i + 4) * 10 + dig(s, i + 5);
    else if (n !== i + 3) return undefined;
    if (!(oh <= 15 && om <= 59)) return undefined;
    offset = (sign === 45 ? -1 : 1) * (oh * 3600 + om * 60);
  }
  const secs = days * 86400 + h * 3600 + mi * 60 + sec - (withTz ? offset : 0);
  return BigInt(secs) * 1_000_000n + BigInt(frac);
}

/** date input. Throws SqlEvalError (invalid) or PredicateError (unsupported format). */
export function parseDate(text: string): number {
  if (text.length === 10) {
    const d = fastYmd(text);
    if (d !== undefined && d <= MAX_DATE_DAY) return d;
  }
  const p = parseDateTime(text, 'date');
  if (p.special) return p.special * Infinity;
  if (p.days < MIN_DAY || p.days > MAX_DATE_DAY) throw new SqlEvalError(`date out of range: "${clip(text)}"`);
  return p.days;
}

/** timestamp / timestamptz input (withTz: apply the offset, default UTC; else ignore it). */
export function parseTimestamp(text: string, withTz: boolean): bigint {
  const f = fastTimestamp(text, withTz);
  if (f !== undefined && f < END_TS_US) return f;
  const p = parseDateTime(text, withTz ? 'timestamp with time zone' : 'timestamp');
  if (p.special) return p.special > 0 ? TS_POS_INF : TS_NEG_INF;
  let v = BigInt(p.days) * US_PER_DAY + BigInt(p.us);
  if (withTz && p.offset) v -= BigInt(p.offset) * 1_000_000n;
  if (v < MIN_TS_US || v >= END_TS_US) throw new SqlEvalError(`timestamp out of range: "${clip(text)}"`);
  return v;
}

function checkTimestampRange(v: bigint): bigint {
  if (v === TS_NEG_INF || v === TS_POS_INF) return v;
  if (v < MIN_TS_US || v >= END_TS_US) throw new SqlEvalError('timestamp out of range');
  return v;
}

export function checkDateRange(d: number): number {
  if (!Number.isFinite(d)) return d;
  if (d < MIN_DAY || d > MAX_DATE_DAY) throw new SqlEvalError('date out of range');
  return d;
}

function pad(n: number, w: number): string {
  const s = String(n);
  return s.length >= w ? s : '0'.repeat(w - s.length) + s;
}

function ymd(days: number): [string, boolean] {
  const [y, mo, d] = civilFromDays(days);
  const bc = y <= 0;
  return [`${pad(bc ? 1 - y : y, 4)}-${pad(mo, 2)}-${pad(d, 2)}`, bc];
}

export function formatDate(days: number): string {
  if (days === Infinity) return 'infinity';
  if (days === -Infinity) return '-infinity';
  const [s, bc] = ymd(days);
  return bc ? `${s} BC` : s;
}

export function formatTimestamp(v: bigint, withTz: boolean): string {
  if (v === TS_POS_INF) return 'infinity';
  if (v === TS_NEG_INF) return '-infinity';
  let days = v / US_PER_DAY;
  let tod = v - days * US_PER_DAY;
  if (tod < 0n) {
    tod += US_PER_DAY;
    days -= 1n;
  }
  const [ds, bc] = ymd(Number(days));
  const t = Number(tod);
  const frac = t % 1e6;
  const secs = (t - frac) / 1e6;
  let out = `${ds} ${pad(Math.floor(secs / 3600), 2)}:${pad(Math.floor(secs / 60) % 60, 2)}:${pad(secs % 60, 2)}`;
  if (frac !== 0) out += `.${pad(frac, 6).replace(/0+$/, '')}`;
  if (withTz) out += '+00';
  return bc ? `${out} BC` : out;
}

/** timestamp -> date (floor to the day) */
export function timestampToDate(v: bigint): number {
  if (v === TS_POS_INF) return Infinity;
  if (v === TS_NEG_INF) return -Infinity;
  let days = v / US_PER_DAY;
  if (days * US_PER_DAY > v) days -= 1n;
  return Number(days);
}

export function dateToTimestamp(d: number): bigint {
  if (d === Infinity) return TS_POS_INF;
  if (d === -Infinity) return TS_NEG_INF;
  return checkTimestampRange(BigInt(d) * US_PER_DAY);
}

/** Rounds a timestamp to `precision` fractional digits like AdjustTimestampForTypmod. */
export function roundTimestamp(v: bigint, precision: number): bigint {
  if (v === TS_POS_INF || v === TS_NEG_INF || precision >= 6) return v;
  const scale = 10n ** BigInt(6 - precision);
  const half = scale / 2n;
  // PostgreSQL rounds half away from zero relative to its own epoch (2000-01-01)
  const x = v - PG_EPOCH_US;
  if (x >= 0n) return ((x + half) / scale) * scale + PG_EPOCH_US;
  return -(((-x + half) / scale) * scale) + PG_EPOCH_US;
}
