/**
 * The recorder's refusals, as errors a caller can tell apart (README, "Recording your own application"): a
 * statement it cannot trace to the rows it read and wrote, and a table whose rows it cannot identify or whose
 * changes it would not see (user errors, `InputError`: the CLI prints the message and exits 2); and a statement
 * sent after the recording was interrupted (RecorderStoppedError).
 */
import { InputError } from '../history/input-errors.js';

/** A statement the recorder cannot record faithfully. The message is `cannot record statement "SQL": reason. hint`. */
export class UnsupportedStatementError extends InputError {
  override name = 'UnsupportedStatementError';
  constructor(
    /** The statement, as the application sent it. */
    readonly sql: string,
    /** Why it cannot be recorded, e.g. "MERGE is not recorded". */
    readonly reason: string,
    /** What to do instead, e.g. "Split it into single-table statements". */
    readonly hint: string,
  ) {
    super(`cannot record statement "${shortSql(sql)}": ${reason}. ${hint}`);
  }
}

/** A table the recorder cannot record (no key, not a table, cascading foreign keys). */
export class UnsupportedTableError extends InputError {
  override name = 'UnsupportedTableError';
  constructor(
    /** The table concerned (for cascading foreign keys: the referencing table, as the catalog names it). */
    readonly table: string,
    readonly reason: string,
    readonly hint: string,
  ) {
    super(`${reason}; ${hint}`);
  }
}

/** The statement on one line, cut to 160 characters, for messages. */
export function shortSql(sql: string): string {
  const s = sql.replace(/\s+/g, ' ').trim();
  return s.length > 160 ? `${s.slice(0, 157)}...` : s;
}

/** A statement sent through a recorder after interrupt(): refused without reaching the server. */
export class RecorderStoppedError extends Error {
  override name = 'RecorderStoppedError';
  constructor(readonly reason: string) {
    super(`the recording was stopped (${reason}): statement not sent`);
  }
}
