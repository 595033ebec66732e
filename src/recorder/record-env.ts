/**
 * The environment variables of a process recording (process-recorder.ts reads them, `isocheck record` sets them).
 * A module of its own so that the CLI does not load the recorder (the parser, pg, ...) just for their names: that
 * was about 0.15 s of every `isocheck record`'s start.
 */
export const RECORD_ENV = {
  out: 'ISOCHECK_RECORD_OUT',
  tables: 'ISOCHECK_RECORD_TABLES',
  meta: 'ISOCHECK_RECORD_META',
  pid: 'ISOCHECK_RECORD_PID',
} as const;
