/**
 * The two kinds of error (as changesets and kysely do): the user's (bad input or usage: a clear message, exit 2) and
 * ours (a bug: say so). `InputError` is the user's; anything else reaching the CLI is a bug.
 */

export class InputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InputError';
  }
}

/** A problem at one line of a history file. */
export interface FormatProblem {
  file: string;
  line: number;
  message: string;
}

/** A malformed history file: every problem found (up to a limit), each `FILE:LINE: what is wrong`. */
export class HistoryFormatError extends InputError {
  /** The file (of the first problem). */
  readonly file: string;
  /** The 1-based line of the first problem. */
  readonly line: number;
  constructor(readonly problems: FormatProblem[]) {
    super(problems.map((p) => `${p.file}:${p.line}: ${p.message}`).join('\n'));
    this.name = 'HistoryFormatError';
    this.file = problems[0]?.file ?? '';
    this.line = problems[0]?.line ?? 0;
  }
}
