#!/usr/bin/env node
// Entry point: the compiled CLI lives in dist/ (built by `npm ci` through the `prepare` script).
//
// `isocheck check` runs in a child Node with a young generation of 64 MB semi-spaces instead of V8's 16 MB
// (docs/scale.md §4): reading a large history keeps most of what it allocates, and with small semi-spaces every
// object is copied by a few hundred scavenges before it settles (a 500,000-transaction history: 304 scavenges
// and ~25% more CPU time than with 92). V8 fixes that size when it starts, so it cannot be set from inside. The
// child gets the same arguments, inherits stdio, and this process exits as it does. Not when the flag is already
// given (NODE_OPTIONS or the command line), under a debugger, or with ISOCHECK_NO_RELAUNCH=1.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/src/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(main))) {
  console.error(
    'isocheck: the compiled CLI is missing (dist/). Run `npm ci` or `npm run build` in the project folder.',
  );
  process.exit(2);
}

const SEMI_SPACE = '--max-semi-space-size=64';
const given = [...process.execArgv, process.env.NODE_OPTIONS ?? ''].join(' ');
const relaunch =
  process.argv[2] === 'check' &&
  process.env.ISOCHECK_NO_RELAUNCH !== '1' &&
  !/--max[-_]semi[-_]space[-_]size/.test(given) &&
  !/--inspect|--debug|--prof|--cpu-prof|--heap-prof/.test(given);

if (!relaunch) {
  await import(main.href);
} else {
  const child = spawn(
    process.execPath,
    [...process.execArgv, SEMI_SPACE, fileURLToPath(main), ...process.argv.slice(2)],
    { stdio: 'inherit', env: { ...process.env, ISOCHECK_NO_RELAUNCH: '1' } },
  );
  // A signal sent to this process alone reaches the check too (Ctrl-C reaches both: it is the process group's).
  const forward = (signal) => child.kill(signal);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, forward);
  child.on('error', async () => {
    // the child could not be started (no such executable, no resources): run here, with V8's default young space
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.off(signal, forward);
    await import(main.href);
  });
  child.on('exit', (code, signal) => {
    if (signal) {
      for (const s of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.off(s, forward);
      process.kill(process.pid, signal);
    } else process.exit(code ?? 1);
  });
}
