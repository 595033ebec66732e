#!/usr/bin/env node
// Entry point: the compiled CLI lives in dist/ (built by `npm ci` through the `prepare` script). A large
// `isocheck check` runs in a child Node with a larger young generation (src/cli/respawn.ts says why).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
const main = new URL('../dist/src/cli/main.js', import.meta.url);
const respawn = new URL('../dist/src/cli/respawn.js', import.meta.url);
if (!existsSync(fileURLToPath(main)) || !existsSync(fileURLToPath(respawn))) {
  console.error(
    'isocheck: the compiled CLI is missing (dist/). Run `npm ci` or `npm run build` in the project folder.',
  );
  process.exit(2);
}
const { respawnIfLarge } = await import(respawn.href);
if (!(await respawnIfLarge(fileURLToPath(import.meta.url)))) await import(main.href);
