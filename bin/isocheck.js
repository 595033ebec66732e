#!/usr/bin/env node
// Entry point: the compiled CLI lives in dist/ (built by `npm ci` through the `prepare` script).
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
const entry = new URL('../dist/src/cli/entry.js', import.meta.url);
if (!existsSync(fileURLToPath(entry))) {
  console.error(
    'isocheck: the compiled CLI is missing (dist/). Run `npm ci` or `npm run build` in the project folder.',
  );
  process.exit(2);
}
await import(entry.href);
