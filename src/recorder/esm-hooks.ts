/**
 * Module resolution hooks (module.register, run in the loader's thread) for `isocheck record`: an ESM import of
 * pg (`import pg from 'pg'`) resolves to pg's ESM entry, which reads pg's CommonJS module in a way a CommonJS hook
 * does not see; it is sent instead to isocheck/pg (pg.ts) with the path of that copy's CommonJS entry, which
 * requires it (through the CommonJS hook) and exports the recording driver under pg's names.
 */
import { fileURLToPath } from 'node:url';

const PG_ESM_ENTRY = /\/pg\/esm\/index\.mjs$/;
const shim = new URL('./pg.js', import.meta.url);

interface Resolved {
  url: string;
  format?: string | null;
}

export async function resolve(
  specifier: string,
  context: { parentURL?: string },
  next: (s: string, c: unknown) => Promise<Resolved>,
): Promise<Resolved & { shortCircuit?: boolean }> {
  const r = await next(specifier, context);
  if (!PG_ESM_ENTRY.test(r.url)) return r;
  const target = new URL(shim);
  target.searchParams.set('pg', fileURLToPath(new URL('../lib/index.js', r.url)));
  return { url: target.href, format: 'module', shortCircuit: true };
}
