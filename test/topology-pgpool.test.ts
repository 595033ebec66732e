// isocheck run --topology pgpool (issue 19): pgpool-II (when installed: Debian pgpool2) in front of a primary and a
// hot standby with apply delay, balancing reads to the standby. At REPEATABLE READ a session's reads miss its own
// writes (a read-your-writes violation [violates SI], transactions shown on pgpool with the standby it chose); at
// SERIALIZABLE pgpool keeps every transaction on the primary, and the history is consistent. Without pgpool: one line.
import { describe, expect, it } from 'vitest';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runWorkload } from '../src/cli/run-command.js';
import { findPgpool } from '../src/db/pgpool.js';
import { readHistory } from '../src/history/reader.js';
import { checkHistory } from '../src/checker/check.js';
import { loadPredicateParser } from '../src/sql/predicate.js';

const dir = mkdtempSync(join(tmpdir(), 'isocheck-topo-pgpool-'));
const installed = findPgpool() !== undefined;

describe.skipIf(!installed)('pgpool-II in front of a primary and a hot standby', () => {
  it('at REPEATABLE READ: a read-your-writes violation', async () => {
    await loadPredicateParser();
    const out = join(dir, 'si.ndjson');
    await runWorkload({
      workload: 'twitter',
      topology: 'pgpool',
      iso: 'si',
      out,
      progress: false,
      log: () => undefined,
    });
    const history = await readHistory(out);
    expect(new Set(history.txns.map((t) => t.node))).toEqual(new Set(['pgpool (reads to standby1)']));
    const r = checkHistory(history);
    expect(r.verdict).toBe('inconsistent');
    expect(r.anomalies.map((a) => a.type)).toContain('read-your-writes');
  });

  it('at SERIALIZABLE: pgpool balances nothing, consistent', async () => {
    await loadPredicateParser();
    const out = join(dir, 'ser.ndjson');
    await runWorkload({
      workload: 'twitter',
      topology: 'pgpool',
      iso: 'ser',
      txns: 40,
      out,
      progress: false,
      log: () => undefined,
    });
    expect(checkHistory(await readHistory(out)).verdict).toBe('consistent');
  });
});

describe.skipIf(installed)('without pgpool-II', () => {
  it('says so in one line', async () => {
    await expect(
      runWorkload({
        workload: 'twitter',
        topology: 'pgpool',
        out: join(dir, 'x.ndjson'),
        progress: false,
        log: () => undefined,
      }),
    ).rejects.toThrow(/needs pgpool-II, which is not installed \(Debian: apt-get install pgpool2\)/);
  });
});
