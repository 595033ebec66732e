/**
 * What bounds one check: a deadline, an optional step limit, and memory (docs/reliability.md, "Memory").
 *
 * Every stage calls `Budget.tick()` / `checkNow()`; either throws `BudgetExceeded`, which one catch in check.ts
 * turns into the verdict `unknown` (`stoppedResult`, stopped.ts), saying which limit stopped it: the deadline,
 * the step limit (`maxSteps`), or memory. Work the verdict does not depend on (explanations) runs in `attempt`.
 * Memory is watched by a `MemoryGuard`, active while a check runs (`withMemoryGuard`), which
 * throws `MemoryExceeded` (a `BudgetExceeded`) instead of letting V8 abort the process:
 *
 *   - the budget polls it (at most every POLL_MS): the JavaScript heap against V8's own heap limit less a margin,
 *     and the heap plus every ArrayBuffer (the n × n bitsets live outside the heap) against the limit
 *     (`--max-memory`, by default most of the machine's physical memory);
 *   - the large typed arrays (model/order.ts, model/relations.ts) are allocated through `allocateWords`, which first
 *     compares what they would take with what is left, and turns an allocation V8 refuses (RangeError) into
 *     the same stop.
 *
 * Before giving up, a guard collects garbage once (the heap and the array buffers count dead objects until a
 * major GC) and measures again. The stop says which stage ran (`memoryStage`) and how much was asked for.
 */
import { getHeapSpaceStatistics, getHeapStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { totalmem } from 'node:os';
import { InputError } from '../history/input-errors.js';

/** Which limit stopped a check. */
export type StopCause = 'time' | 'steps' | 'memory';

export class BudgetExceeded extends Error {
  constructor(
    message = 'search budget exceeded',
    readonly stopCause: StopCause = 'time',
  ) {
    super(message);
  }
}

/** The check would outgrow its memory: `message` is the whole reason ("stopped: memory limit of ..."). */
export class MemoryExceeded extends BudgetExceeded {
  constructor(message: string) {
    super(message, 'memory');
    this.name = 'MemoryExceeded';
  }
}

/** A deadline (and an optional step limit) shared by every stage of one check; memory is polled with the clock. */
export class Budget {
  steps = 0;
  constructor(
    readonly deadline: number = Infinity,
    readonly maxSteps: number = Infinity,
  ) {}
  tick(): void {
    this.steps++;
    if (this.steps > this.maxSteps) throw new BudgetExceeded('step limit reached', 'steps');
    if ((this.steps & 1023) === 0) {
      if (Date.now() > this.deadline) throw new BudgetExceeded();
      active?.poll();
    }
  }

  /** Checks the clock now: before and inside expensive steps (a saturation pass can take seconds). */
  checkNow(): void {
    if (Date.now() > this.deadline) throw new BudgetExceeded();
    active?.poll();
  }
}

/**
 * Runs work the verdict does not depend on (an explanation, a sub-history): a stop abandons it (undefined) and
 * leaves the verdict as it is; anything else thrown propagates.
 */
export function attempt<T>(work: () => T): T | undefined {
  try {
    return work();
  } catch (e) {
    if (!(e instanceof BudgetExceeded)) throw e;
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Memory

const MiB = 1024 * 1024;
/** Memory is measured at most this often by a poll (process.memoryUsage() costs a few microseconds). */
const POLL_MS = 25;
/** Allocations below this only poll; larger ones are compared with what is left first. */
const SMALL_BYTES = 4 * MiB;
/** Of V8's limit for the old generation, this share (at least HEAP_MARGIN_MIN) is kept free: what runs between two
 *  polls, and building the result. */
const HEAP_MARGIN = 0.1;
const HEAP_MARGIN_MIN = 16 * MiB;
/** Of the physical memory (or the container's limit), the default limit for the heap and the array buffers. */
const PHYSICAL_SHARE = 0.85;

/** Megabytes as `3,900 MB` (MiB, as the other limits count). */
function formatMB(bytes: number): string {
  return `${Math.round(bytes / MiB).toLocaleString('en-US')} MB`;
}

/**
 * A memory size for `--max-memory`: a number of MB (`4096`), or a number with a unit: `512MB`, `4GB`, `1.5g`,
 * `800M`, `2TiB` (KB, MB, GB, TB, with or without the B or an i; binary units, as --max-line-mb). Throws InputError.
 */
export function parseMemorySize(text: string, option = '--max-memory'): number {
  const m = /^\s*(\d+(?:\.\d*)?|\.\d+)\s*(?:([kmgt])(?:i?b)?)?\s*$/i.exec(text);
  const units: Record<string, number> = { k: 1024, m: MiB, g: 1024 * MiB, t: 1024 * 1024 * MiB };
  const bytes = m ? Number(m[1]) * units[(m[2] ?? 'm').toLowerCase()] : NaN;
  if (!Number.isFinite(bytes))
    throw new InputError(`${option} ${text}: expected a size such as 4GB, 512MB, or a number of MB`);
  if (bytes < MiB) throw new InputError(`${option} ${text}: at least 1 MB`);
  return Math.floor(bytes);
}

/** The machine's physical memory, or the container's (cgroup) limit when lower. */
function physicalMemory(): number {
  const total = totalmem();
  const constrained = (process as { constrainedMemory?: () => number | undefined }).constrainedMemory?.();
  return constrained !== undefined && constrained > 0 && constrained < total ? constrained : total;
}

let gcFunction: (() => void) | null | undefined;
/** A full garbage collection, when the runtime lets us have one (measured again after it). */
function collectGarbage(): boolean {
  if (gcFunction === undefined) {
    try {
      gcFunction = (globalThis as { gc?: () => void }).gc ?? null;
      if (!gcFunction) {
        setFlagsFromString('--expose-gc');
        gcFunction = runInNewContext('gc') as () => void;
      }
    } catch {
      gcFunction = null;
    }
  }
  if (!gcFunction) return false;
  gcFunction();
  return true;
}

/**
 * V8's limit for the old generation, the part of the heap that fills up (V8 aborts when it is full after a
 * collection): heap_size_limit less the young generation, three semi-spaces of 16 MB unless --max-semi-space-size
 * says otherwise (`--max-old-space-size` is this limit).
 */
function oldGenerationLimit(): number {
  const semi = semiSpaceMB(process.execArgv, process.env.NODE_OPTIONS);
  const limit = getHeapStatistics().heap_size_limit;
  return Math.max(limit / 4, limit - 3 * (semi !== undefined && semi > 0 ? semi : 16) * MiB);
}

/**
 * The --max-semi-space-size (MB) that Node's flags or NODE_OPTIONS give this process: `--max-semi-space-size=64`,
 * `--max_semi_space_size=64` or `--max-semi-space-size 64`; NaN when the flag is there without a number;
 * undefined when it is not there. Node reads NODE_OPTIONS first and the command line after, so a flag on the
 * command line wins. (cli/respawn.ts asks it too, before starting a check in a child.)
 */
export function semiSpaceMB(execArgv: readonly string[], nodeOptions: string | undefined): number | undefined {
  const flags = [...(nodeOptions ?? '').split(/\s+/), ...execArgv];
  let mb: number | undefined;
  for (let i = 0; i < flags.length; i++) {
    const m = /^--max[-_]semi[-_]space[-_]size(?:=(.*))?$/.exec(flags[i]);
    if (!m) continue;
    const value = m[1] ?? flags[i + 1];
    // the last one counts: the command line's over NODE_OPTIONS'
    mb = value !== undefined && /^\d+$/.test(value) ? Number(value) : Number.NaN;
  }
  return mb;
}

interface Use {
  /** The JavaScript heap. */
  heap: number;
  /** Its old generation (the heap less the young objects). */
  old: number;
  /** The heap and the ArrayBuffers. */
  total: number;
}

function measure(): Use {
  const u = process.memoryUsage();
  let young = 0;
  for (const s of getHeapSpaceStatistics())
    if (s.space_name === 'new_space' || s.space_name === 'new_large_object_space') young += s.space_used_size;
  // Typed arrays and Buffers live outside the heap, in ArrayBuffers. `external` would also count the SQL parser's
  // WebAssembly memory: 128 MB reserved, mostly never touched.
  return { heap: u.heapUsed, old: u.heapUsed - young, total: u.heapUsed + u.arrayBuffers };
}

/** The limits of one check, and what it used when it was stopped. */
export class MemoryGuard {
  /** The heap's old generation may grow to this: V8's own limit less a margin (past it V8 aborts the process). */
  readonly heapCap: number;
  /** The heap and every ArrayBuffer together. */
  readonly totalCap: number;
  private readonly v8Limit: number;
  /** What the check is doing, for the reason of a stop (`memoryStage`). */
  stage = 'checking';
  /** The last stop thrown, if any. */
  stopped?: MemoryExceeded;
  private nextPoll = 0;
  /** When a forced collection may run again: they may take at most a fifth of the time. */
  private nextGc = 0;

  /** `limitBytes`: the most the heap and the array buffers may hold together (default: most of the physical memory). */
  constructor(readonly limitBytes?: number) {
    this.v8Limit = oldGenerationLimit();
    this.heapCap = Math.floor(this.v8Limit - Math.max(HEAP_MARGIN * this.v8Limit, HEAP_MARGIN_MIN));
    this.totalCap = limitBytes ?? Math.floor(physicalMemory() * PHYSICAL_SHARE);
  }

  /** Measures now and then (at most every POLL_MS); throws MemoryExceeded past a limit. */
  poll(): void {
    const now = Date.now();
    if (now < this.nextPoll) return;
    this.nextPoll = now + POLL_MS;
    this.ensure(0, undefined);
  }

  /** Before allocating `bytes` outside the heap (a typed array): throws MemoryExceeded if they would not fit. */
  reserve(bytes: number, what: () => string): void {
    if (bytes < SMALL_BYTES) this.poll();
    else this.ensure(bytes, what);
  }

  private ensure(bytes: number, what: (() => string) | undefined): void {
    let use = measure();
    if (this.fits(use, bytes)) return;
    const now = Date.now();
    if (now >= this.nextGc && collectGarbage()) {
      const after = Date.now();
      this.nextGc = after + 4 * (after - now);
      use = measure();
      if (this.fits(use, bytes)) return;
    }
    throw this.stop(what, use);
  }

  private fits(use: Use, bytes: number): boolean {
    return use.old <= this.heapCap && use.total + bytes <= this.totalCap;
  }

  /** The stop, with its reason: which limit, during what, how much was in use and asked for. */
  stop(what?: () => string, use: Use = measure()): MemoryExceeded {
    const inUse =
      `${formatMB(use.total)} in use (JavaScript heap ${formatMB(use.heap)}, typed arrays and ` +
      `buffers ${formatMB(use.total - use.heap)})`;
    const asked = what ? `; ${what()}` : '';
    let message: string;
    if (use.old > this.heapCap) {
      message =
        `stopped: memory limit of ${formatMB(this.heapCap)} of JavaScript heap reached ` +
        `while ${this.stage}: ${formatMB(use.old)} in its old generation (V8's limit for ` +
        `it: ${formatMB(this.v8Limit)}, less a margin; NODE_OPTIONS=--max-old-space-size=MB raises it); ${inUse}`;
    } else {
      const which =
        this.limitBytes !== undefined
          ? '--max-memory'
          : `${Math.round(PHYSICAL_SHARE * 100)}% of the ${formatMB(physicalMemory())} of physical memory; ` +
            `--max-memory sets it`;
      message =
        `stopped: memory limit of ${formatMB(this.totalCap)} (${which}) reached ` +
        `while ${this.stage}: ${inUse}${asked}`;
    }
    this.stopped = new MemoryExceeded(message);
    return this.stopped;
  }
}

/** The guard of the check running now (checks are synchronous: one at a time on a thread). */
let active: MemoryGuard | undefined;

/** Names what the running check is doing, for the reason of a memory stop ("while saturating the commit order"). */
export function memoryStage(stage: string): void {
  if (active) active.stage = stage;
}

/** Polls the running check's guard (for loops that allocate on the heap without a budget at hand). */
export function pollMemory(): void {
  active?.poll();
}

/** V8's RangeErrors for sizes it cannot allocate (a negative length, a bug, is not one of them). */
const ALLOCATION_FAILED = new RegExp(
  String.raw`^(Array buffer allocation failed|Invalid typed array length: \d{8,}|Invalid string length|` +
    '(Map|Set) maximum size exceeded)',
);

/** Whether `e` is V8 refusing an allocation for its size (a RangeError, not a bug of ours). */
export function isAllocationFailure(e: unknown): e is RangeError {
  return e instanceof RangeError && ALLOCATION_FAILED.test(e.message);
}

/**
 * A zeroed Uint32Array of `count` words (bitset rows), or MemoryExceeded when it would not fit in what is left or
 * V8 refuses it. `what` names it for the reason ("the n×n order of 40,000 transactions").
 */
export function allocateWords(count: number, what: () => string): Uint32Array {
  return allocate(count * 4, what, () => new Uint32Array(count));
}

/** A copy of `words`, as allocateWords. */
export function copyWords(words: Uint32Array, what: () => string): Uint32Array {
  return allocate(words.byteLength, what, () => words.slice());
}

function allocate<T>(bytes: number, what: () => string, make: () => T): T {
  active?.reserve(bytes, () => `${what()} needs ${formatMB(bytes)} more`);
  try {
    return make();
  } catch (e) {
    if (!isAllocationFailure(e)) throw e;
    throw (active ?? new MemoryGuard()).stop(
      () => `${what()} needs ${formatMB(bytes)} more, which V8 refused (${e.message})`,
    );
  }
}

/**
 * Before allocating many small arrays together (`bytes` in all; `what` is plural: "the read-from sets ..."): see
 * allocateWords.
 */
export function reserveBytes(bytes: number, what: () => string): void {
  active?.reserve(bytes, () => `${what()} need ${formatMB(bytes)} more`);
}

/**
 * Runs one synchronous check with a memory guard active (`limitBytes`, or the default). A check stopped for memory
 * (its verdict `unknown`) gets the guard's reason instead of the generic one of its catch site; a stop that escapes
 * every catch site, or an allocation V8 refused, becomes `stopped(reason)`. An inconsistent verdict whose
 * explanation was cut short says so in a note.
 */
export function withMemoryGuard<R extends { verdict: string; reason?: string; notes: string[] }>(
  limitBytes: number | undefined,
  run: () => R,
  stopped: (reason: string) => R,
): R {
  const outer = active;
  const guard = new MemoryGuard(limitBytes);
  guard.stage = 'building the model';
  active = guard;
  try {
    const result = run();
    if (guard.stopped) {
      if (result.verdict === 'unknown') result.reason = guard.stopped.message;
      else if (result.verdict === 'inconsistent')
        result.notes.push(`the explanation may be incomplete: ${guard.stopped.message}`);
    }
    return result;
  } catch (e) {
    if (e instanceof MemoryExceeded) return stopped(e.message);
    if (isAllocationFailure(e)) return stopped(guard.stop(() => `V8 refused an allocation (${e.message})`).message);
    throw e;
  } finally {
    active = outer;
  }
}
