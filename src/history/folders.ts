/**
 * Creating the folders a file will go in. Not `mkdirSync(dir, { recursive: true })`: on some paths (under
 * /proc/self, for one) Node's recursive mkdir loops forever; here each missing folder is made once, and a
 * failure is an ordinary error (EEXIST, ENOTDIR, EACCES) the caller can report.
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
