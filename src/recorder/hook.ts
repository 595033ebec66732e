/**
 * The module hook `isocheck record` preloads (`node --import <this file>`, through NODE_OPTIONS): every `pg` the
 * application loads, by `require('pg')` (CommonJS: TypeORM, Sequelize, knex) or `import pg from 'pg'` (ESM,
 * whose pg entry imports pg's CommonJS one), is replaced by the process's recording driver over it
 * (process-recorder.ts), configured from the environment (ISOCHECK_RECORD_OUT, ISOCHECK_RECORD_TABLES).
 *
 * - CommonJS: Module._load is patched; the module it returns is looked at, not the name asked for, so `pg` and
 *   `pg/lib/index.js` give the recording driver, and what is not pg's module is not touched.
 * - ESM: pg's ESM entry reads its CommonJS module in a way Module._load's callers do not see, so a resolve hook
 *   (esm-hooks.ts) sends `import ... from 'pg'` to isocheck/pg (pg.ts) over the same copy of pg.
 */
import Module, { register } from 'node:module';
import { isPgModule } from './driver.js';
import { processDriver } from './process-recorder.js';

type Load = (request: string, parent: unknown, isMain: boolean) => unknown;
const loader = Module as unknown as { _load: Load };
const load = loader._load;

loader._load = function (this: unknown, request: string, parent: unknown, isMain: boolean): unknown {
  const m = load.call(this, request, parent, isMain);
  return isPgModule(m) && typeof (m as { escapeIdentifier?: unknown }).escapeIdentifier === 'function'
    ? processDriver(m)
    : m;
};

register('./esm-hooks.js', import.meta.url);
