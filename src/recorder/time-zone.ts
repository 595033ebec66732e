/**
 * Whether a session's TimeZone setting is UTC at every instant (docs/recording.md, session settings): then the
 * checker, which reads dates and timestamps as UTC, compares a WHERE on a date/time column as the server did.
 *
 * PostgreSQL accepts many spellings and reports the setting as it was given, or rewritten: `SET TIME ZONE 0` and
 * `SET TIME ZONE INTERVAL '+00:00' HOUR TO MINUTE` show as `<+00>-00` (a POSIX zone), Sequelize's `+00:00` as
 * itself. Accepted: the IANA names that are aliases of UTC (never a zone that is at UTC today but had another
 * offset once, such as Africa/Abidjan or Iceland: a timestamp of 1900 would compare differently), a numeric
 * offset of zero (`0`, `+00`, `-00:00`, `+00:00:00`), and a POSIX zone with a zero offset and no daylight-saving
 * rule (`<+00>-00`, `UTC0`, `GMT+0`, `<UTC>0`).
 */
const UTC_NAMES = new Set(['utc', 'uct', 'gmt', 'zulu', 'universal', 'greenwich', 'gmt0', 'gmt+0', 'gmt-0']);

/** A zero offset: hours, then optional minutes and seconds, with or without colons. */
const ZERO_OFFSET = /^[+-]?0{1,2}(?::?00){0,2}$/;
/** A POSIX zone: an abbreviation (letters, or anything in <>) and an offset, with no DST part after it. */
const POSIX_ZONE = /^(?:<[^<>]*>|[a-z]{3,})([+-]?\d{1,2}(?::\d{2}){0,2})$/;

export function isUtcZone(setting: string): boolean {
  const name = setting.trim().toLowerCase();
  const bare = name.startsWith('etc/') ? name.slice(4) : name;
  if (UTC_NAMES.has(bare)) return true;
  if (ZERO_OFFSET.test(name)) return true;
  const posix = POSIX_ZONE.exec(name);
  return posix !== null && ZERO_OFFSET.test(posix[1]);
}
