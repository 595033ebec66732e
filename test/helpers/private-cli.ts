/**
 * The command line built from the current sources into a folder of its own, for tests that run it as a child
 * process while other tests rebuild dist/ in place (no race on dist/). Returns the path of its bin/isocheck.js.
 */
import { copyFileSync, mkdirSync, symlinkSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..', '..');

export function buildPrivateCli(dir: string): string {
  execFileSync(
    process.execPath,
    [
      join(root, 'node_modules', 'typescript', 'bin', 'tsc'),
      '-p',
      'tsconfig.build.json',
      '--outDir',
      join(dir, 'dist'),
    ],
    { cwd: root, stdio: 'inherit' },
  );
  mkdirSync(join(dir, 'bin'));
  copyFileSync(join(root, 'bin', 'isocheck.js'), join(dir, 'bin', 'isocheck.js'));
  copyFileSync(join(root, 'package.json'), join(dir, 'package.json'));
  symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'));
  return join(dir, 'bin', 'isocheck.js');
}
