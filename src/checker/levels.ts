/**
 * Isolation levels as dense integers, the strength lattice SER ⊂ SI ⊂ PC ⊂ CC ⊂ RA ⊂ RC (docs/semantics.md
 * §2.4), and the `--iso` override: `SER` for every transaction, or `Label=LEVEL,...,*=LEVEL` by transaction label.
 */
import { ISOLATION_LEVELS, type IsolationLevel } from '../history/format.js';
import { InputError } from '../history/input-errors.js';
import type { AnomalyType } from './anomaly.js';

export const RC = 0;
export const RA = 1;
export const CC = 2;
export const PC = 3;
export const SI = 4;
export const SER = 5;

/** Level index: the position in ISOLATION_LEVELS, weakest first. */
export function levelIndex(level: IsolationLevel): number {
  return ISOLATION_LEVELS.indexOf(level);
}

export function levelName(index: number): IsolationLevel {
  return ISOLATION_LEVELS[index];
}

export const LEVEL_DESCRIPTIONS: Record<IsolationLevel, string> = {
  RC:
    'Read Committed: a statement sees every transaction that committed before an earlier statement of its ' +
    'transaction read from it',
  RA: 'Read Atomic: sees all or nothing of each transaction it read from',
  CC: 'Causal Consistency: sees everything that causally precedes it (session order and reads, transitively)',
  PC: 'Prefix Consistency: sees a prefix of the commit order that includes everything it read from',
  SI: 'Snapshot Isolation: Prefix plus Conflict (no two concurrent writers of one key)',
  SER: 'Serializability: sees every transaction committed before it',
};

/** A `--iso` override: a level for every transaction, or one per label with a default. */
export interface IsoOverride {
  all?: IsolationLevel;
  byLabel: Map<string, IsolationLevel>;
  fallback?: IsolationLevel;
}

function parseLevel(text: string, spec: string): IsolationLevel {
  const up = text.trim().toUpperCase();
  const aliases: Record<string, IsolationLevel> = {
    SERIALIZABLE: 'SER',
    'REPEATABLE READ': 'SI',
    'REPEATABLE-READ': 'SI',
    'READ COMMITTED': 'RC',
    'READ-COMMITTED': 'RC',
  };
  const level = (aliases[up] ?? up) as IsolationLevel;
  if (!(ISOLATION_LEVELS as readonly string[]).includes(level)) {
    throw new InputError(`--iso ${spec}: unknown level "${text}" (levels: ${ISOLATION_LEVELS.join(', ')})`);
  }
  return level;
}

/** Parses `SER` or `Payment=SER,NewOrder=SI,*=RC`. */
export function parseIsoOverride(spec: string): IsoOverride {
  const result: IsoOverride = { byLabel: new Map() };
  if (!spec.includes('=')) {
    result.all = parseLevel(spec, spec);
    return result;
  }
  for (const part of spec.split(',')) {
    if (part.trim() === '') continue;
    const eq = part.indexOf('=');
    if (eq <= 0) throw new InputError(`--iso ${spec}: "${part}" should be Label=LEVEL or *=LEVEL`);
    const label = part.slice(0, eq).trim();
    const level = parseLevel(part.slice(eq + 1), spec);
    if (label === '*') result.fallback = level;
    else result.byLabel.set(label, level);
  }
  return result;
}

/** The level a transaction is checked at: the override's, else the recorded one. */
export function effectiveLevel(
  recorded: IsolationLevel,
  label: string | undefined,
  override?: IsoOverride,
): IsolationLevel {
  if (!override) return recorded;
  if (override.all) return override.all;
  if (label !== undefined && override.byLabel.has(label)) return override.byLabel.get(label)!;
  return override.fallback ?? recorded;
}

/**
 * Which anomalies each level forbids (each level forbids its own and those of every weaker one), with where the
 * axiom comes from. Rows are ours (anomaly.ts names them, with Adya's and Elle's names beside); the axioms are
 * docs/semantics.md §2.4 after Biswas & Enea, OOPSLA 2019, and Bouajjani, Enea & Román-Calvo, CAV (§3.2).
 * The well-formedness anomalies (garbage, aborted and intermediate reads, G1c, internal inconsistency) and a
 * missing row are forbidden at every level; a commit-order cycle with no shorter name, and no consistent commit
 * order, by the levels of the readers involved (no row).
 */
export const FORBIDDEN_BY_LEVEL: readonly {
  level: IsolationLevel;
  forbids: readonly AnomalyType[];
  citation: string;
}[] = [
  {
    level: 'RC',
    forbids: [
      'aborted-read',
      'intermediate-read',
      'circular-information-flow',
      'garbage-read',
      'internal-inconsistency',
      'missing-row',
      'read-your-writes',
      'fractured-read',
      'non-monotonic-read',
    ],
    citation:
      'Adya 1999 §4.1 (PL-2: G1a, G1b, G1c); the RC axiom of Biswas & Enea, OOPSLA 2019 (a read sees its ' +
      'session predecessors and what an earlier statement read from): read your writes (Terry et al. 1994), ' +
      'and no fractured or non-monotonic read after a statement that read from the writer',
  },
  {
    level: 'RA',
    forbids: ['fractured-read'],
    citation:
      'Read Atomic: Bailis et al., SIGMOD 2014 (no fractured reads, in any statement order); ' +
      'Cerone, Bernardi & Gotsman, CONCUR 2015',
  },
  {
    level: 'CC',
    forbids: ['causality-violation', 'non-monotonic-read'],
    citation:
      'Causal consistency: Cerone et al. 2015; Biswas & Enea 2019 (Causal axiom); ' +
      'monotonic reads across a session: Terry et al. 1994',
  },
  {
    level: 'PC',
    forbids: ['long-fork', 'read-skew'],
    citation:
      'Prefix consistency: Cerone et al. 2015, Biswas & Enea 2019 (Prefix axiom); long fork is Adya G2 (Elle G2); ' +
      'read skew is Berenson et al. 1995 A5A (Adya G-single)',
  },
  {
    level: 'SI',
    forbids: ['lost-update'],
    citation:
      'Snapshot isolation = Prefix + Conflict: Cerone et al. 2015; ' +
      'lost update is Berenson et al., SIGMOD 1995, P4 (Adya G2-item)',
  },
  {
    level: 'SER',
    forbids: ['write-skew'],
    citation:
      'Serializability: Papadimitriou 1979; write skew is Berenson et al. 1995 A5B (Adya G2-item, PL-3 forbids G2)',
  },
];

/** The weakest level that forbids an anomaly (undefined: no row names it, e.g. no-consistent-order). */
export function weakestForbidding(type: AnomalyType): IsolationLevel | undefined {
  return FORBIDDEN_BY_LEVEL.find((row) => row.forbids.includes(type))?.level;
}
