/**
 * `npm run bench -- <name> [args]`: the benchmarks. Speed and memory targets live here, never in unit tests.
 *   load [MB]     stream-validate and load a synthetic history of about MB megabytes (default 100)
 */
const [name = 'load', ...args] = process.argv.slice(2);
switch (name) {
  case 'load': {
    const { runLoadBench } = await import('./load-history.js');
    await runLoadBench(Number(args[0] ?? 100));
    break;
  }
  default:
    console.error(`unknown benchmark "${name}" (available: load)`);
    process.exitCode = 2;
}
