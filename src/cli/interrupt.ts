/**
 * Ctrl-C and kill for the recording commands (run, scenario, demo), and the up-front checks of their output paths
 * (checkOutputFile: a bad --out or --report is one line before any work). One watcher per command turns SIGINT, SIGTERM
 * and SIGHUP into an AbortSignal, which the command answers by writing what it holds (the recorder's interrupt())
 * and stopping; the command then prints one line and exits 128 + the signal's number (130, 143, 129).
 *
 *   signal -> AbortSignal aborted (synchronously: the recorder writes the in-flight transactions at once)
 *          -> the command unwinds, throws InterruptedError -> one line on stderr, exit 130/143/129
 *   second signal, or the command still running `graceMs` later -> the line the command registered, exit now
 *
 * Coordination with the embedded server (src/db/embedded.ts): it has its own listener for these signals, which
 * stops the server synchronously and re-raises the signal only when it is the last listener. While a watcher is
 * installed it is not, so the process lives on to finish the history and exit with our code; process.exit() runs
 * the embedded module's 'exit' hook (servers and private copies of the binaries removed).
 */
import { closeSync, existsSync, openSync, statSync, unlinkSync } from 'node:fs';
import { dirname } from 'node:path';
import { InputError } from '../history/input-errors.js';
import { makeFolders, WRITE_FAILURES, writeFailure } from '../history/folders.js';

export {
  WATCHED_SIGNALS,
  signalExitCode,
  InterruptedError,
  abortSignalName,
  type WatchedSignal,
} from '../recorder/interrupted.js';
import { WATCHED_SIGNALS, signalExitCode } from '../recorder/interrupted.js';

export interface SignalWatch {
  /** Aborted on the first signal, with the signal's name as its reason. */
  readonly signal: AbortSignal;
  /** The first signal received. */
  readonly received: NodeJS.Signals | undefined;
  /**
   * The line printed when the process must exit before the command ends by itself (a second signal, or after
   * `graceMs`): what the command recorded so far. Set by the command as it learns it.
   */
  lastWords: () => string;
  /** Removes the listeners (after the command ended). */
  dispose(): void;
}

const DEFAULT_GRACE_MS = 15_000;

/**
 * Installs listeners for SIGINT, SIGTERM and SIGHUP until dispose(). Install it before the embedded server
 * starts, so that this listener runs first: the history is written before the server is stopped.
 */
export function watchSignals(options: { graceMs?: number } = {}): SignalWatch {
  const controller = new AbortController();
  let received: NodeJS.Signals | undefined;
  let timer: NodeJS.Timeout | undefined;
  const exitNow = (signal: NodeJS.Signals): void => {
    process.stderr.write(`isocheck: ${watch.lastWords()}\n`);
    process.exit(signalExitCode(signal));
  };
  const handler = (signal: NodeJS.Signals): void => {
    if (received) {
      exitNow(received); // a second Ctrl-C: the history is already written
      return;
    }
    received = signal;
    controller.abort(signal);
    // the command ends by itself within moments; a hung connection must not keep it alive
    timer = setTimeout(() => exitNow(signal), options.graceMs ?? DEFAULT_GRACE_MS);
    timer.unref();
  };
  for (const s of WATCHED_SIGNALS) process.on(s, handler);
  const watch: SignalWatch = {
    signal: controller.signal,
    get received() {
      return received;
    },
    lastWords: () => `interrupted (${received ?? 'signal'})`,
    dispose() {
      if (timer) clearTimeout(timer);
      for (const s of WATCHED_SIGNALS) process.removeListener(s, handler);
      if (received) {
        // the command has ended and set its exit code: nothing left should keep the process alive
        const signal = received;
        setTimeout(
          () => process.exit(typeof process.exitCode === 'number' ? process.exitCode : signalExitCode(signal)),
          2000,
        ).unref();
      }
    },
  };
  return watch;
}

const DENIED = 'permission denied; give a file in a folder you can write';
const NOT_A_FOLDER = 'a part of the path is a file, not a folder';
/** Why an output file cannot be written, by errno code (checkOutputFile). */
const OUTPUT_FILE_FAILURES = {
  ...WRITE_FAILURES,
  EISDIR: 'is a directory; give a file name',
  EACCES: DENIED,
  EPERM: DENIED,
  ENOTDIR: NOT_A_FOLDER,
  EEXIST: NOT_A_FOLDER,
};

/**
 * Checks up front that `file` can be written as a file (its folder created if missing): a directory, a path
 * through a file or an unwritable place is one line naming the option, before any work is done.
 */
export function checkOutputFile(file: string, option: string): void {
  const existed = existsSync(file);
  try {
    if (existed && statSync(file).isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
    makeFolders(dirname(file));
    closeSync(openSync(file, 'a'));
    if (!existed) unlinkSync(file);
  } catch (e) {
    throw new InputError(`${option} ${file}: cannot write there: ${writeFailure(e, OUTPUT_FILE_FAILURES)}`);
  }
}
