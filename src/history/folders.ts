/**
 * Creating the folders a file will go in. Not `mkdirSync(dir, { recursive: true })`: on some paths (under
 * /proc/self, for one) Node's recursive mkdir loops forever; here each missing folder is made once, and a
 * failure is an ordinary error (EEXIST, ENOTDIR, EACCES) the caller can report, in words by writeFailure.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

export function makeFolders(dir: string): void {
  const missing: string[] = [];
  for (let d = resolve(dir); !existsSync(d); d = dirname(d)) {
    missing.push(d);
    if (dirname(d) === d) break;
  }
  for (const d of missing.reverse()) mkdirSync(d);
}

/** A failed write's errno code in words, for a one-line error; a caller adds or replaces codes with its own advice. */
export const WRITE_FAILURES: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
  ENOENT: 'the folder cannot be created',
};

/** Why a file system call failed, for a one-line error: its errno code in words from `reasons`, else the first
 *  line of its message. */
export function writeFailure(e: unknown, reasons: Readonly<Record<string, string>> = WRITE_FAILURES): string {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  if (typeof code === 'string' && Object.hasOwn(reasons, code)) return reasons[code];
  return String((e as Error | null)?.message ?? e).split('\n')[0];
}
