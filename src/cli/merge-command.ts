/**
 * `isocheck merge a.ndjson b.ndjson ... -o run.ndjson`: one history from the files several client processes
 * recorded against one database (src/history/merge.ts). Prints one line per input and one for the result;
 * problems are `FILE:LINE: reason` (exit 2, through the CLI's InputError handling).
 */
import { InputError } from '../history/input-errors.js';
import { mergeHistories, rangeText } from '../history/merge.js';
import { checkOutputFile } from './interrupt.js';

export interface MergeCommandOptions {
  out: string;
  json?: boolean;
  /** As given on the command line (a number of MiB / GiB). */
  maxLineMb?: string;
  maxInputGb?: string;
}

/** A size option in MiB or GiB (as check takes them), in bytes. */
function size(option: string, text: string | undefined, unit: number, max: number): number | undefined {
  if (text === undefined) return undefined;
  const v = Number(text);
  if (text.trim() === '' || !Number.isFinite(v) || v <= 0 || v > max)
    throw new InputError(`${option} ${text}: expected a number above 0 and at most ${max}`);
  return Math.round(v * unit);
}

export async function runMergeCommand(files: string[], opts: MergeCommandOptions): Promise<number> {
  const maxLineBytes = size('--max-line-mb', opts.maxLineMb, 1024 ** 2, 511);
  const maxInputBytes = size('--max-input-gb', opts.maxInputGb, 1024 ** 3, 1024 * 1024);
  checkOutputFile(opts.out, '-o');
  const summary = await mergeHistories(files, opts.out, {
    maxLineBytes,
    maxInputBytes,
    log: opts.json ? undefined : (line) => process.stderr.write(`isocheck: ${line}\n`),
  });
  if (opts.json) {
    console.log(
      JSON.stringify(
        { ...summary, files: summary.files.map((f) => ({ ...f, sessions: Object.fromEntries(f.sessions) })) },
        null,
        2,
      ),
    );
    return 0;
  }
  for (const f of summary.files) {
    const renumbered = summary.renumbered ? ` -> ${rangeText([...f.sessions.values()])}` : '';
    const renamed = f.renamedIds > 0 ? ` (${f.renamedIds} transaction ids renamed)` : '';
    console.log(
      `  ${f.file}: ${f.transactions} ` +
        `transaction${f.transactions === 1 ? '' : 's'}, ${rangeText([...f.sessions.keys()])}${renumbered}` +
        `${f.truncated ? ' (truncated: no end line)' : ''}${renamed}`,
    );
  }
  console.log(
    `${summary.out}: ${summary.transactions} transactions in ${summary.sessions} sessions ` +
      `from ${summary.files.length} files${summary.truncated ? ' (no end line: an input was truncated)' : ''}; ` +
      `check it with isocheck check ${summary.out}`,
  );
  return 0;
}
