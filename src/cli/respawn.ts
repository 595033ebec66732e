/**
 * A large `isocheck check` runs in a child Node process with a larger young generation (docs/scale.md §4, "The young
 * generation"). Reading and modelling a history allocate objects that nearly all live until the verdict; with V8's
 * default semi-spaces (16 MB) a 1,000,000-transaction history takes about 600 scavenges, and old-generation
 * collections with pauses of seconds. 64 MB semi-spaces made its check ×0.87-0.98 as long (paired runs), and left
 * a 500,000-transaction one unchanged. The sizes of a V8 heap's parts are fixed when the process starts, so the only
 * way to give them to a user who types `isocheck check` is to start Node again with the flag.
 *
 * The entry point (entry.ts) asks `respawnIfLarge` first: it starts the child (the same Node, its flags, the entry
 * point, the same arguments, standard streams inherited) when the command is `check`, its files add up to
 * RESPAWN_MIN_BYTES or more (a .gz file counted at GZIP_RATIO times its size), and neither the flags nor NODE_OPTIONS
 * set the semi-space already. ISOCHECK_RESPAWN=0 never respawns, =1 always (for `check`); the child gets 0. The
 * parent forwards SIGINT, SIGTERM and SIGHUP, and ends as the child ended: with its exit code, or killed by its
 * signal.
 */
import { spawn } from 'node:child_process';
import { statSync } from 'node:fs';

/** The child's --max-semi-space-size, in MB: the young generation is three of them. */
export const SEMI_SPACE_MB = 64;
/** Histories at least this large (decompressed, estimated) are checked in a child. */
export const RESPAWN_MIN_BYTES = 128 * 1024 * 1024;
/** How much larger a gzip history is assumed to be once decompressed (NDJSON histories compress about 8 to 1). */
export const GZIP_RATIO = 8;

const SEMI_FLAG = /--max[-_]semi[-_]space[-_]size/;
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** What decides a respawn: the command line after the script, Node's flags, the environment, file sizes. */
export interface RespawnInput {
  args: readonly string[];
  execArgv: readonly string[];
  env: NodeJS.ProcessEnv;
  /** A regular file's size in bytes, undefined for anything else (standard input, a pipe, a missing file). */
  sizeOf: (path: string) => number | undefined;
}

/** The bytes the files among `check`'s arguments hold, a gzip file counted GZIP_RATIO times. */
export function historyBytes(args: readonly string[], sizeOf: RespawnInput['sizeOf']): number {
  let total = 0;
  for (const a of args.slice(1)) {
    if (a.startsWith('-')) continue; // an option, or `-` (standard input: its size is unknown)
    const n = sizeOf(a);
    if (n !== undefined) total += /\.gz$/i.test(a) ? n * GZIP_RATIO : n;
  }
  return total;
}

/** Whether this command line is checked in a child with SEMI_SPACE_MB semi-spaces. */
export function shouldRespawn(input: RespawnInput): boolean {
  const { args, execArgv, env } = input;
  if (args[0] !== 'check' || env.ISOCHECK_RESPAWN === '0') return false;
  if (execArgv.some((f) => SEMI_FLAG.test(f)) || SEMI_FLAG.test(env.NODE_OPTIONS ?? '')) return false;
  return env.ISOCHECK_RESPAWN === '1' || historyBytes(args, input.sizeOf) >= RESPAWN_MIN_BYTES;
}

const regularFileSize = (path: string): number | undefined => {
  try {
    const s = statSync(path);
    return s.isFile() ? s.size : undefined;
  } catch {
    return undefined; // the check itself reports a missing or unreadable file, in one line
  }
};

/**
 * Starts `script` again in a child with larger semi-spaces when shouldRespawn says so, and resolves true once it
 * runs: this process then only waits, forwards signals, and exits as the child did. Resolves false (the caller
 * runs the command itself) when no respawn is due or the child could not start.
 */
export function respawnIfLarge(script: string): Promise<boolean> {
  const args = process.argv.slice(2);
  const input = { args, execArgv: process.execArgv, env: process.env, sizeOf: regularFileSize };
  if (!shouldRespawn(input)) return Promise.resolve(false);
  const child = spawn(
    process.execPath,
    [...process.execArgv, `--max-semi-space-size=${SEMI_SPACE_MB}`, script, ...args],
    {
      stdio: 'inherit',
      env: { ...process.env, ISOCHECK_RESPAWN: '0' },
    },
  );
  const forward = (s: NodeJS.Signals) => () => {
    // Ctrl-C reaches the child from the terminal too; a second SIGINT to a check that is dying changes nothing
    if (child.exitCode === null && child.signalCode === null) child.kill(s);
  };
  const listeners = FORWARDED.map((s) => [s, forward(s)] as const);
  return new Promise((resolve) => {
    child.once('error', () => resolve(false));
    child.once('spawn', () => {
      for (const [s, f] of listeners) process.on(s, f);
      resolve(true);
    });
    child.once('exit', (code, signal) => {
      for (const [s, f] of listeners) process.off(s, f);
      if (signal !== null) process.kill(process.pid, signal);
      else process.exit(code ?? 1);
    });
  });
}
