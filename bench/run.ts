/**
 * `npm run bench -- <name> [args]`: the benchmarks. Speed and memory targets live here, never in unit tests.
 *   load [MB]     stream-validate and load a synthetic history of about MB megabytes (default 100)
 *   paper [...]   the CAV paper's experiments (section 6) and extended axes: bench/RESULTS.md (see bench/paper.ts)
 *   recorder [TXNS] [SESSIONS]  throughput with and without the recorder, same run
 *   profile FILE  CPU profile of checking one history, top functions (see bench/profile.ts)
 */
const [name = 'load', ...args] = process.argv.slice(2);
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
    const { runRecorderBench } = await import('./recorder-overhead.js');
    await runRecorderBench(Number(args[0] ?? 300), Number(args[1] ?? 4));
    break;
  }
  case 'profile': {
    const { runProfile } = await import('./profile.js');
    await runProfile(args);
    break;
  }
  default:
    console.error(`unknown benchmark "${name}" (available: load, paper, recorder, profile)`);
    process.exitCode = 2;
}
