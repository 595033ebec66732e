/**
 * A private copy of the compiled code (dist/) for a benchmark's workers, taken when the run starts, so that a
 * rebuild during the run (other work on the machine, a test's build) cannot mix two versions of the checker in
 * one run. It lives under bench/.histories/ (git-ignored) so that imports still find the package's node_modules;
 * it is removed by release() and on SIGINT/SIGTERM.
 */
import { cpSync, rmSync } from 'node:fs';
import { join } from 'node:path';

export interface CodeSnapshot {
  /** The copy: holds src/, bench/, workloads/ as dist/ does. */
  dir: string;
  /** Removes the copy (and the signal handlers). */
  release: () => void;
}

/** Copies `distDir` to `root`/bench/.histories/.dist-`name`-PID. */
export function snapshotCode(root: string, distDir: string, name: string): CodeSnapshot {
  const dir = join(root, 'bench', '.histories', `.dist-${name}-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  cpSync(distDir, dir, { recursive: true });
  const drop = () => rmSync(dir, { recursive: true, force: true });
  const onSignal = () => {
    drop();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return {
    dir,
    release: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
      drop();
    },
  };
}
