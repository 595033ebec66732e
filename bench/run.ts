/**
 * `npm run bench -- <name> [args]`: the benchmarks (USAGE below). Speed and memory targets live here, never in
 * unit tests.
 */
import { UsageError } from './usage-error.js';

const USAGE =
  `usage: npm run bench -- <name> [args]
  load [MB]                   stream-validate and load a synthetic history of about MB megabytes (default 100)
  paper [options]             the CAV paper's experiments and extended axes -> bench/RESULTS.md (paper --help)
  recorder [options]          an ORM app (examples/ kysely, drizzle) unrecorded and recorded (hook, isocheck record,
                              drop-in driver), same run -> bench/results/recorder-overhead.md (options: see
                              bench/recorder-app-overhead.ts: --apps --isos --txns 100 --workers 4 ` +
  `--rounds 5 --base DIST)
  recorder-smallbank [TXNS] [SESSIONS]  SmallBank throughput with and without the recorder (default 300 4)
  proxy [TXNS] [SESSIONS] [ROUNDS]      SmallBank direct, through a byte relay, pgbouncer (if installed), the pg ` +
  `recorder and isocheck proxy (default 100 16 5)
  profile FILE                CPU profile of checking one history, top functions
  components FILE...          how much of each history splits into independent parts (rows, sessions)
  compare --base DIST FILE... our checker at another build (DIST) and this one on the same files, one run
  scale [options]             time and peak RSS vs transactions on generated bank histories -> bench/results/scale.csv,
                              scale.svg (scale --help: --sizes 5000,10000,20000,40000 --levels si+rc,si,rc ` +
  `--timeout 60)`;

const [name = 'load', ...args] = process.argv.slice(2);
try {
  await run(name, args);
} catch (e) {
  if (!(e instanceof UsageError)) throw e;
  console.error(`bench: ${e.message}`);
  process.exitCode = 2;
}

async function run(name: string, args: string[]): Promise<void> {
  switch (name) {
    case 'load': {
      const { runLoadBench } = await import('./load-history.js');
      await runLoadBench(Number(args[0] ?? 100));
      break;
    }
    case 'paper': {
      const { runPaperBench } = await import('./paper.js');
      await runPaperBench(args);
      break;
    }
    case 'recorder': {
      const { runRecorderAppBench } = await import('./recorder-app-overhead.js');
      await runRecorderAppBench(args);
      break;
    }
    case 'recorder-smallbank': {
      const { runRecorderBench } = await import('./recorder-overhead.js');
      await runRecorderBench(Number(args[0] ?? 300), Number(args[1] ?? 4));
      break;
    }
    case 'proxy': {
      const { runProxyBench } = await import('./proxy-overhead.js');
      await runProxyBench(Number(args[0] ?? 100), Number(args[1] ?? 16), Number(args[2] ?? 5));
      break;
    }
    case 'profile': {
      const { runProfile } = await import('./profile.js');
      await runProfile(args);
      break;
    }
    case 'components': {
      const { runComponents } = await import('./scale/components.js');
      await runComponents(args);
      break;
    }
    case 'compare': {
      const { runCompare } = await import('./compare.js');
      await runCompare(args);
      break;
    }
    case 'scale': {
      const { runScaleBench } = await import('./scale/scale.js');
      await runScaleBench(args);
      break;
    }
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE);
      break;
    default:
      console.error(`unknown benchmark "${name}"\n${USAGE}`);
      process.exitCode = 2;
  }
}
