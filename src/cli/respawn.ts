/**
 * A large `isocheck check` runs in a child Node process with a larger young generation (docs/scale.md §4, "The young
 * generation"). Reading and modelling a history allocate objects that nearly all live until the verdict; with V8's
 * default semi-spaces (16 MB) a 1,000,000-transaction history takes about 600 scavenges, and old-generation
 * collections with pauses of seconds. 64 MB semi-spaces made its check ×0.87-0.98 as long (paired runs), and left
 * a 500,000-transaction one unchanged. The sizes of a V8 heap's parts are fixed when the process starts, so the only
 * way to give them to a user who types `isocheck check` is to start Node again with the flag.
 *
 * The entry point (entry.ts) asks `respawnIfLarge` first: it starts the child (the same Node, its flags, the entry
 * point, the same arguments, standard streams inherited) when the command is `check`, its named files add up to
 * RESPAWN_MIN_BYTES or more (a gzip file, known by its first two bytes, counted at GZIP_RATIO times its size;
 * standard input and pipes are not counted), and neither the flags nor NODE_OPTIONS set the semi-space already, nor
 * does a flag debug or profile this process (`--inspect`, `--cpu-prof`...: the child would open a second debugger
 * port or write a second profile). ISOCHECK_RESPAWN=0 never respawns, =1 always (for `check`); the child gets 0.
 * The parent forwards SIGINT, SIGTERM and SIGHUP, and ends as the child ended: with its exit code, or killed by its
 * signal (128 + its number when the signal does not end it: as PID 1 in a container, the kernel ignores it). The
 * child leaves when the parent is gone (an IPC channel that the parent holds; `watchParent`).
 */
import { spawn } from 'node:child_process';
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import { constants } from 'node:os';
import { semiSpaceMB } from '../checker/budget.js';

/** The child's --max-semi-space-size, in MB: the young generation is three of them. */
export const SEMI_SPACE_MB = 64;
/** Histories at least this large (decompressed, estimated) are checked in a child: 1M bank transactions are
 *  585 MB, where the gain was measured; 500,000 (290 MB) gained nothing (×1.02). */
export const RESPAWN_MIN_BYTES = 512 * 1024 * 1024;
/** How much larger a gzip history is assumed to be once decompressed (NDJSON histories compress about 8 to 1). */
export const GZIP_RATIO = 8;
/** `check`'s options that take a value (src/cli/main.ts; a test compares them with `check --help`). */
export const CHECK_VALUE_OPTIONS: ReadonlySet<string> = new Set([
  '--iso',
  '--timeout',
  '--report',
  '--max-line-mb',
  '--max-input-gb',
  '--max-memory',
]);

const DEBUG_FLAG = /^--(inspect|debug|prof|cpu-prof|heap-prof|diagnostic-dir|report-)/;
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** What a named file holds, for the estimate: its size, and whether it is gzip. */
export interface FileSize {
  bytes: number;
  gzip: boolean;
}

/** What decides a respawn: the command line after the script, Node's flags, the environment, file sizes. */
export interface RespawnInput {
  args: readonly string[];
  execArgv: readonly string[];
  env: NodeJS.ProcessEnv;
  /** A regular file's size, undefined for anything else (standard input, a pipe, a missing file). */
  sizeOf: (path: string) => FileSize | undefined;
}

/** The bytes the files among `check`'s arguments hold once decompressed (estimated: gzip GZIP_RATIO times). */
export function historyBytes(args: readonly string[], sizeOf: RespawnInput['sizeOf']): number {
  let total = 0;
  for (let i = 1; i < args.length; i++) {
    const a = args[i];
    if (CHECK_VALUE_OPTIONS.has(a)) i++; // the option's value is not a file
    if (a.startsWith('-')) continue; // an option (--x=value included), or `-` (standard input: size unknown)
    const f = sizeOf(a);
    if (f !== undefined) total += f.gzip ? f.bytes * GZIP_RATIO : f.bytes;
  }
  return total;
}

/** Whether this command line is checked in a child with SEMI_SPACE_MB semi-spaces. */
export function shouldRespawn(input: RespawnInput): boolean {
  const { args, execArgv, env } = input;
  if (args[0] !== 'check' || env.ISOCHECK_RESPAWN === '0') return false;
  if (semiSpaceMB(execArgv, env.NODE_OPTIONS) !== undefined) return false;
  const nodeOptions = (env.NODE_OPTIONS ?? '').split(/\s+/);
  if ([...execArgv, ...nodeOptions].some((f) => DEBUG_FLAG.test(f))) return false;
  return env.ISOCHECK_RESPAWN === '1' || historyBytes(args, input.sizeOf) >= RESPAWN_MIN_BYTES;
}

const regularFileSize = (path: string): FileSize | undefined => {
  try {
    const s = statSync(path);
    if (!s.isFile()) return undefined;
    const head = Buffer.alloc(2);
    const fd = openSync(path, 'r');
    try {
      readSync(fd, head, 0, 2, 0);
    } finally {
      closeSync(fd);
    }
    return { bytes: s.size, gzip: head[0] === 0x1f && head[1] === 0x8b };
  } catch {
    return undefined; // the check itself reports a missing or unreadable file, in one line
  }
};

/** In the child: leave when the parent is gone (killed by a signal it could not forward, SIGKILL included), at the
 *  next turn of the event loop (a check's stages run synchronously between them). The channel does not keep the
 *  child alive otherwise. */
export function watchParent(): void {
  if (process.env.ISOCHECK_RESPAWN !== '0' || !process.channel) return;
  process.channel.unref();
  process.once('disconnect', () => process.exit(128 + constants.signals.SIGHUP));
}

/**
 * Starts `script` again in a child with larger semi-spaces when shouldRespawn says so, and resolves true once it
 * runs: this process then only waits, forwards signals, and exits as the child did. Resolves false (the caller
 * runs the command itself) when no respawn is due or the child could not start.
 */
export function respawnIfLarge(script: string): Promise<boolean> {
  const args = process.argv.slice(2);
  const input = { args, execArgv: process.execArgv, env: process.env, sizeOf: regularFileSize };
  if (!shouldRespawn(input)) return Promise.resolve(false);
  let child: ReturnType<typeof spawn>;
  try {
    child = spawn(process.execPath, [...process.execArgv, `--max-semi-space-size=${SEMI_SPACE_MB}`, script, ...args], {
      stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
      env: { ...process.env, ISOCHECK_RESPAWN: '0' },
    });
  } catch {
    return Promise.resolve(false); // no process to spare (EAGAIN, EMFILE): check here
  }
  const forward = (s: NodeJS.Signals) => () => {
    // Ctrl-C reaches the child from the terminal too; a second SIGINT to a check that is dying changes nothing
    if (child.exitCode === null && child.signalCode === null) child.kill(s);
  };
  const listeners = FORWARDED.map((s) => [s, forward(s)] as const);
  for (const [s, f] of listeners) process.on(s, f);
  const stopForwarding = () => {
    for (const [s, f] of listeners) process.off(s, f);
  };
  return new Promise((resolve) => {
    child.once('error', () => {
      stopForwarding();
      resolve(false);
    });
    child.once('spawn', () => resolve(true));
    child.once('exit', (code, signal) => {
      stopForwarding();
      if (signal === null) process.exit(code ?? 1);
      process.kill(process.pid, signal);
      // still here: the signal does not end this process (PID 1 in a container ignores it)
      process.exit(128 + (constants.signals[signal] ?? 0));
    });
  });
}
