/**
 * Dates, times and intervals in binary format (PostgreSQL's date_send, time_send, timetz_send, timestamp_send,
 * timestamptz_send, interval_send), for the proxy's conversion of results and parameters (formats.ts):
 *
 *   date         int32 days since 2000-01-01 (infinity: INT32_MAX, -infinity: INT32_MIN)
 *   timestamp    int64 microseconds since 2000-01-01 00:00 (infinity: INT64_MAX, -infinity: INT64_MIN)
 *   timestamptz  the same, in UTC
 *   time         int64 microseconds since midnight
 *   timetz       int64 microseconds, int32 the zone's offset in seconds west of UTC
 *   interval     int64 microseconds, int32 days, int32 months
 *
 * Results come from the server as text in the session's DateStyle and IntervalStyle: the proxy reads the ISO
 * DateStyle (the default) and the postgres (the default) and iso_8601 IntervalStyles (styleSupported). Parameters
 * are given to the server as text it reads whatever the style: ISO 8601 dates (year first) and intervals.
 */

/** PostgreSQL's date2j (utils/adt/datetime.c): the Julian day of a proleptic Gregorian date (year 0 = 1 BC). */
function date2j(year: number, month: number, day: number): number {
  let y = year;
  let m = month;
  if (m > 2) {
    m += 1;
    y += 4800;
  } else {
    m += 13;
    y += 4799;
  }
  const century = Math.floor(y / 100);
  return y * 365 - 32167 + Math.floor(y / 4) - century + Math.floor(century / 4) + Math.floor((7834 * m) / 256) + day;
}

/** PostgreSQL's j2date: the proleptic Gregorian date of a Julian day. */
function j2date(jd: number): [number, number, number] {
  let julian = jd + 32044;
  let quad = Math.floor(julian / 146097);
  const extra = (julian - quad * 146097) * 4 + 3;
  julian += 60 + quad * 3 + Math.floor(extra / 146097);
  quad = Math.floor(julian / 1461);
  julian -= quad * 1461;
  let y = Math.floor((julian * 4) / 1461);
  julian = (y !== 0 ? (julian + 305) % 365 : (julian + 306) % 366) + 123;
  y += quad * 4;
  const q = Math.floor((julian * 2141) / 65536);
  return [y - 4800, ((q + 10) % 12) + 1, julian - Math.floor((7834 * q) / 256)];
}

const EPOCH_JDATE = date2j(2000, 1, 1);
const DAY_US = 86_400_000_000n;
const INT64_MAX = 0x7fffffffffffffffn;
const INT64_MIN = -0x8000000000000000n;
const INT32_MAX = 0x7fffffff;
const INT32_MIN = -0x80000000;

/** DateStyle and IntervalStyle whose text the proxy reads. */
export function styleSupported(dateStyle: string, intervalStyle: string): { date: boolean; interval: boolean } {
  return {
    date: /^\s*iso\b/i.test(dateStyle),
    interval: /^(postgres|iso_8601)$/i.test(intervalStyle.trim()),
  };
}

// ---- text (as the server prints it) to binary ------------------------------------------------------------------

const DATE = /^(\d{4,})-(\d\d)-(\d\d)( BC)?$/;
const TIMESTAMP =
  /^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?(?:([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?)?( BC)?$/;
const TIME = /^(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?(?:([+-])(\d\d)(?::(\d\d))?(?::(\d\d))?)?$/;

const days = (year: string, month: string, day: string, bc: string | undefined): number =>
  date2j(bc ? 1 - Number(year) : Number(year), Number(month), Number(day)) - EPOCH_JDATE;

const micros = (h: string, m: string, s: string, frac: string | undefined): bigint =>
  BigInt(((Number(h) * 60 + Number(m)) * 60 + Number(s)) * 1_000_000 + Number((frac ?? '').padEnd(6, '0')));

/** The zone's offset in seconds east of UTC, as printed (+05:30). */
const offsetEast = (sign: string | undefined, h?: string, m?: string, s?: string): number =>
  sign === undefined ? 0 : (sign === '-' ? -1 : 1) * (Number(h) * 3600 + Number(m ?? 0) * 60 + Number(s ?? 0));

function int64(v: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(v);
  return b;
}

export function dateToBinary(text: string): Buffer | undefined {
  const b = Buffer.alloc(4);
  if (text === 'infinity' || text === '-infinity') {
    b.writeInt32BE(text === 'infinity' ? INT32_MAX : INT32_MIN);
    return b;
  }
  const m = DATE.exec(text);
  if (!m) return undefined;
  b.writeInt32BE(days(m[1], m[2], m[3], m[4]));
  return b;
}

/** timestamp (zone false) or timestamptz (zone true: its offset printed, the value in UTC). */
export function timestampToBinary(text: string, zone: boolean): Buffer | undefined {
  if (text === 'infinity' || text === '-infinity') return int64(text === 'infinity' ? INT64_MAX : INT64_MIN);
  const m = TIMESTAMP.exec(text);
  if (!m || (m[8] !== undefined) !== zone) return undefined;
  const local = BigInt(days(m[1], m[2], m[3], m[12])) * DAY_US + micros(m[4], m[5], m[6], m[7]);
  return int64(local - BigInt(offsetEast(m[8], m[9], m[10], m[11])) * 1_000_000n);
}

/** time (zone false) or timetz (zone true). */
export function timeToBinary(text: string, zone: boolean): Buffer | undefined {
  const m = TIME.exec(text);
  if (!m || (m[5] !== undefined) !== zone) return undefined;
  const t = int64(micros(m[1], m[2], m[3], m[4]));
  if (!zone) return t;
  const z = Buffer.alloc(4);
  z.writeInt32BE(-offsetEast(m[5], m[6], m[7], m[8]));
  return Buffer.concat([t, z]);
}

function interval(months: number, dayCount: number, us: bigint): Buffer {
  const b = Buffer.alloc(16);
  b.writeBigInt64BE(us, 0);
  b.writeInt32BE(dayCount, 8);
  b.writeInt32BE(months, 12);
  return b;
}

const POSTGRES_UNIT = /^([+-]?\d+) (year|years|mon|mons|day|days)$/;
const POSTGRES_TIME = /^([+-])?(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?$/;
const ISO_INTERVAL =
  /^P(?:(-?\d+)Y)?(?:(-?\d+)M)?(?:(-?\d+)D)?(?:T(?:(-?\d+)H)?(?:(-?\d+)M)?(?:(-?)(\d+)(?:\.(\d{1,6}))?S)?)?$/;

/** An interval's text in IntervalStyle postgres ("1 year 2 mons -3 days +04:05:06.5") or iso_8601 ("P1Y2M-3DT4H"). */
export function intervalToBinary(text: string): Buffer | undefined {
  // (PostgreSQL 17 on: infinite intervals, every field at its limit)
  if (text === 'infinity') return interval(INT32_MAX, INT32_MAX, INT64_MAX);
  if (text === '-infinity') return interval(INT32_MIN, INT32_MIN, INT64_MIN);
  const iso = ISO_INTERVAL.exec(text);
  if (iso) {
    const n = (i: number): number => Number(iso[i] ?? 0);
    const secs = BigInt(iso[7] ?? 0) * 1_000_000n + BigInt((iso[8] ?? '').padEnd(6, '0'));
    const us = BigInt(n(4) * 3600 + n(5) * 60) * 1_000_000n + (iso[6] === '-' ? -secs : secs);
    return interval(n(1) * 12 + n(2), n(3), us);
  }
  let months = 0;
  let dayCount = 0;
  let us = 0n;
  // tokens: "N unit" pairs, then maybe a time
  const words = text.split(' ');
  for (let i = 0; i < words.length; i++) {
    const unit = i + 1 < words.length ? POSTGRES_UNIT.exec(`${words[i]} ${words[i + 1]}`) : null;
    if (unit) {
      const v = Number(unit[1]);
      if (unit[2].startsWith('year')) months += v * 12;
      else if (unit[2].startsWith('mon')) months += v;
      else dayCount += v;
      i++;
      continue;
    }
    const t = i === words.length - 1 ? POSTGRES_TIME.exec(words[i]) : null;
    if (!t) return undefined;
    const v = BigInt(t[2]) * 3_600_000_000n + micros('0', t[3], t[4], t[5]);
    us = t[1] === '-' ? -v : v;
  }
  return interval(months, dayCount, us);
}

// ---- binary (as a client sends it) to text the server reads ----------------------------------------------------

const pad = (n: number | bigint, width = 2): string => String(n).padStart(width, '0');

/** A Julian day's date, year first (ISO 8601: read so in every DateStyle), BC when the year is 0 or before. */
function dateText(jd: number): { date: string; bc: boolean } {
  const [y, m, d] = j2date(jd);
  const bc = y <= 0;
  return { date: `${pad(bc ? 1 - y : y, 4)}-${pad(m)}-${pad(d)}`, bc };
}

const timeText = (us: bigint): string => {
  const s = us / 1_000_000n;
  return `${pad(s / 3600n)}:${pad((s / 60n) % 60n)}:${pad(s % 60n)}.${pad(us % 1_000_000n, 6)}`;
};

export function dateFromBinary(b: Buffer): string {
  const v = b.readInt32BE(0);
  if (v === INT32_MAX) return 'infinity';
  if (v === INT32_MIN) return '-infinity';
  const { date, bc } = dateText(v + EPOCH_JDATE);
  return bc ? `${date} BC` : date;
}

/** timestamp, or timestamptz (zone true: given in UTC, +00). */
export function timestampFromBinary(b: Buffer, zone: boolean): string {
  const v = b.readBigInt64BE(0);
  if (v === INT64_MAX) return 'infinity';
  if (v === INT64_MIN) return '-infinity';
  let dayCount = v / DAY_US;
  let rest = v % DAY_US;
  if (rest < 0n) {
    rest += DAY_US;
    dayCount -= 1n;
  }
  const { date, bc } = dateText(Number(dayCount) + EPOCH_JDATE);
  return `${date} ${timeText(rest)}${zone ? '+00' : ''}${bc ? ' BC' : ''}`;
}

/** time, or timetz (zone true). */
export function timeFromBinary(b: Buffer, zone: boolean): string {
  const t = timeText(b.readBigInt64BE(0));
  if (!zone) return t;
  const east = -b.readInt32BE(8);
  const a = Math.abs(east);
  return `${t}${east < 0 ? '-' : '+'}${pad(Math.floor(a / 3600))}:${pad(Math.floor(a / 60) % 60)}:${pad(a % 60)}`;
}

/** An interval as ISO 8601 with signed fields (read so in every IntervalStyle). */
export function intervalFromBinary(b: Buffer): string {
  const us = b.readBigInt64BE(0);
  const dayCount = b.readInt32BE(8);
  const months = b.readInt32BE(12);
  if (us === INT64_MAX && dayCount === INT32_MAX && months === INT32_MAX) return 'infinity';
  if (us === INT64_MIN && dayCount === INT32_MIN && months === INT32_MIN) return '-infinity';
  const neg = us < 0n;
  const a = neg ? -us : us;
  const sign = neg ? '-' : '';
  const hours = a / 3_600_000_000n;
  const minutes = (a / 60_000_000n) % 60n;
  const secs = `${(a / 1_000_000n) % 60n}.${pad(a % 1_000_000n, 6)}`;
  return `P${months}M${dayCount}DT${sign}${hours}H${sign}${minutes}M${sign}${secs}S`;
}
