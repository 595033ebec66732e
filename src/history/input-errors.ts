/**
 * The two kinds of error (style.md, changesets): the user's (bad input or usage: a clear message, exit 2) and
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

export class HistoryFormatError extends InputError {
  constructor(readonly problems: FormatProblem[]) {
    super(problems.map((p) => `${p.file}:${p.line}: ${p.message}`).join('\n'));
    this.name = 'HistoryFormatError';
  }
}
