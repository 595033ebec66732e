/**
 * A recording stopped by a signal (docs/reliability.md): the signals the recording commands answer, the exit code
 * a shell gives a process the signal killed, and the error that carries the one line to print. Shared by the
 * commands (src/cli/interrupt.ts watches the signals) and the scenario runner, which both stop a recording.
 */
import { constants } from 'node:os';

export const WATCHED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
export type WatchedSignal = (typeof WATCHED_SIGNALS)[number];

/** 128 + the signal's number, as a shell reports a process the signal killed (SIGINT 130, SIGTERM 143). */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

/** A command stopped by a signal; the message is the one line to print (without the `isocheck: ` prefix). */
export class InterruptedError extends Error {
  override name = 'InterruptedError';
  constructor(
    readonly signal: NodeJS.Signals,
    message: string,
  ) {
    super(message);
  }

  get exitCode(): number {
    return signalExitCode(this.signal);
  }
}

/** The signal an AbortSignal from watchSignals() was aborted with (SIGINT when it was aborted otherwise). */
export function abortSignalName(signal: AbortSignal | undefined): NodeJS.Signals {
  const r = signal?.reason;
  return typeof r === 'string' && (WATCHED_SIGNALS as readonly string[]).includes(r) ? (r as NodeJS.Signals) : 'SIGINT';
}
