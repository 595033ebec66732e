/**
 * PostgreSQL's own isolation-tester specs, an external suite that some tests run when it is there.
 *
 * One setting says where: `ISOCHECK_PG_SPECS=DIR` (no path is assumed: a fresh clone has nothing beside it).
 * Without it, the tests that need the suite skip and say why; a folder named by the setting that does not exist
 * is a failure, not a skip (`.ci/run` sets it, so CI always runs them).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

export interface ExternalSpecs {
  /** The folder holding the `.spec` files, when it is there. */
  dir?: string;
  /** The known specs (KNOWN_SPECS) found in it, sorted. */
  files: string[];
  /** Known specs missing from the folder. */
  absent: string[];
  /** Why the suite is not run (set when `dir` is not). */
  skipReason?: string;
  /** The setting named a folder that does not exist. */
  missing?: string;
}

export const PG_SPECS_SETTING = 'ISOCHECK_PG_SPECS';

/** The specs of PostgreSQL's suite the tests run (and whose outcomes they know); a folder such as PostgreSQL's
 *  own src/test/isolation/specs holds many more, which are left alone. */
export const KNOWN_SPECS = [
  'classroom-scheduling.spec',
  'project-manager.spec',
  'read-only-anomaly.spec',
  'receipt-report.spec',
  'simple-write-skew.spec',
  'temporal-range-integrity.spec',
  'total-cash.spec',
  'two-ids.spec',
];

export function externalSpecs(): ExternalSpecs {
  const set = process.env[PG_SPECS_SETTING] || undefined;
  const dir = set ? resolve(set) : undefined;
  if (dir !== undefined && !existsSync(dir))
    return { files: [], absent: KNOWN_SPECS, missing: dir, skipReason: `${PG_SPECS_SETTING}=${set}: no such folder` };
  if (dir === undefined) {
    const skipReason =
      `PostgreSQL's isolation specs are not here: set ${PG_SPECS_SETTING}=DIR (a folder of isolation-tester ` +
      `.spec files) to run these tests`;
    // vitest's summary counts skipped tests without their reasons: say it where it shows
    process.stderr.write(`external isolation-spec tests SKIPPED: ${skipReason}\n`);
    return { files: [], absent: KNOWN_SPECS, skipReason };
  }
  const present = new Set(readdirSync(dir));
  return { dir, files: KNOWN_SPECS.filter((f) => present.has(f)), absent: KNOWN_SPECS.filter((f) => !present.has(f)) };
}

/** A spec of the suite, by file name. */
export const specPath = (suite: ExternalSpecs, file: string): string => join(suite.dir!, file);
