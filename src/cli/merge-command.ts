/**
 * `isocheck merge a.ndjson b.ndjson ... -o run.ndjson`: one history from the files several client processes
 * recorded against one database (src/history/merge.ts). Prints one line per input and one for the result;
 * problems are `FILE:LINE: reason` (exit 2, through the CLI's InputError handling).
 */
import { mergeHistories, rangeText } from '../history/merge.js';
import { checkOutputFile } from './interrupt.js';

export interface MergeCommandOptions {
  out: string;
  json?: boolean;
  maxLineMb?: number;
  maxInputGb?: number;
}

export async function runMergeCommand(files: string[], opts: MergeCommandOptions): Promise<number> {
  checkOutputFile(opts.out, '-o');
  const summary = await mergeHistories(files, opts.out, {
    maxLineBytes: opts.maxLineMb === undefined ? undefined : Math.round(opts.maxLineMb * 1024 * 1024),
    maxInputBytes: opts.maxInputGb === undefined ? undefined : Math.round(opts.maxInputGb * 1024 ** 3),
    log: opts.json ? undefined : (line) => process.stderr.write(`isocheck: ${line}\n`),
  });
  if (opts.json) {
    console.log(JSON.stringify({ ...summary, files: summary.files.map((f) => ({ ...f, sessions: Object.fromEntries(f.sessions) })) }, null, 2));
    return 0;
  }
  for (const f of summary.files) {
    console.log(`  ${f.file}: ${f.transactions} transaction${f.transactions === 1 ? '' : 's'}, ${rangeText([...f.sessions.keys()])}${summary.renumbered ? ` -> ${rangeText([...f.sessions.values()])}` : ''}${f.truncated ? ' (truncated: no end line)' : ''}${f.renamedIds > 0 ? ` (${f.renamedIds} transaction ids renamed)` : ''}`);
  }
  console.log(`${summary.out}: ${summary.transactions} transactions in ${summary.sessions} sessions from ${summary.files.length} files${summary.truncated ? ' (no end line: an input was truncated)' : ''}; check it with isocheck check ${summary.out}`);
  return 0;
}
