/**
 * `isocheck demo cluster` (issue 19): what a read replica breaks, in a few seconds on a fresh clone. isocheck builds
 * a primary and a hot standby on throwaway embedded servers (src/db/topology.ts, recovery_min_apply_delay 100 ms)
 * and runs Twitter at READ COMMITTED through `isocheck run --topology replica`'s routing: each client's writes go to
 * the primary, its read-only transactions to the standby, as a read/write-splitting pool does. A client then reads,
 * on the standby, a row it has just written on the primary and misses its own write: READ-YOUR-WRITES VIOLATION
 * [violates RC], with the server of each transaction named in the explanation.
 *
 * Decisions:
 * - 4 clients x 25 transactions: the violation shows with the first seed on an idle machine; seeds are tried until
 *   one shows it (each attempt builds the cluster anew: about 2 s).
 * - The servers are stopped when each run ends (runWorkload closes the cluster), and at exit and on Ctrl-C by the
 *   embedded servers' handlers (embedded.ts); Ctrl-C gives the same one line and exit status as `isocheck demo`.
 */
import { InputError } from '../history/input-errors.js';
import { renderResult } from '../checker/explain/explain.js';
import { checkFile } from './check-command.js';
import { renderRunSummary, runWorkload } from './run-command.js';

export interface ClusterDemoOptions {
  db?: string;
  out?: string;
  attempts?: number;
}

export async function clusterDemo(
  options: ClusterDemoOptions,
  signal: AbortSignal,
  onInterrupt: (line: string) => void,
): Promise<number> {
  if (options.db)
    throw new InputError(
      'demo cluster builds its own servers: leave out --db (isocheck run WORKLOAD --db PRIMARY --replica ' +
        'STANDBY runs on your own)',
    );
  const say = (s = '') => console.log(s);
  const dir = options.out ?? 'histories/runs';
  say('isocheck demo cluster: a primary and a hot standby (throwaway embedded PostgreSQL servers)');
  say("Twitter at READ COMMITTED, 4 clients x 25 transactions: each client's writes go to the primary, its read-only");
  say('transactions to the standby (as a read/write-splitting pool does); the standby replays 100 ms behind.\n');
  const attempts = options.attempts ?? 10;
  let shown = false;
  for (let seed = 1; seed <= attempts && !shown; seed++) {
    const run = await runWorkload({
      workload: 'twitter',
      topology: 'replica',
      standbys: 1,
      applyDelay: 100,
      iso: 'rc',
      sessions: 4,
      txns: 25,
      seed: String(seed),
      out: `${dir}/demo-cluster-twitter-replica.ndjson`,
      progress: false,
      signal,
      onInterrupt,
      log: (line) => {
        if (line.startsWith('database: ')) say(`servers: ${line.slice('database: '.length)}`);
      },
    });
    say(renderRunSummary(run));
    const r = await checkFile(run.file, { timeout: 60 });
    say(renderResult(run.file, r.result!));
    shown = r.verdict === 'inconsistent' && (r.result?.anomalies ?? []).some((a) => a.type === 'read-your-writes');
    if (!shown && seed < attempts)
      say(`  (no violation with seed ${seed}: the standby kept up this time; trying seed ${seed + 1})\n`);
  }
  say();
  say('What you saw: every transaction ran at READ COMMITTED, which promises a client its own committed writes; but');
  say('the read ran on the standby ("on standby1"), which had not yet replayed the write made on the primary ("on');
  say('primary"). The servers are stopped. Next: `isocheck run twitter --topology replica --check`,');
  say(
    '`isocheck run smallbank --topology shards --iso ser --check` (a fractured read through postgres_fdw), the README.',
  );
  return shown ? 0 : 1;
}
