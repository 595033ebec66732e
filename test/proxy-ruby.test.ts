// isocheck proxy under Ruby: an ActiveRecord application (Rails 6.1, Debian's ruby-activerecord) over ruby-pg
// (libpq). ActiveRecord prepares its statements by name (a1, a2, ...), locks rows (FOR UPDATE), reads in batches
// (find_in_batches: ORDER BY id LIMIT n, then id > last), writes with INSERT ... ON CONFLICT (insert_all,
// upsert_all), nests transactions as savepoints, and runs threads on its connection pool. The same script
// (test/fixtures/proxy/activerecord_app.rb) runs on a database directly and through the proxy on a twin: the output
// is the same and the history consistent. Skipped, with the reason, when Ruby or ActiveRecord is not installed.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { check } from '../src/index.js';
import { twinServer } from './helpers/twin-databases.js';
import { program } from './helpers/program.js';

const probe = spawnSync('ruby', ['-e', 'require "pg"; require "active_record"'], { stdio: 'ignore', timeout: 20_000 });
const ready = probe.status === 0;
const server = twinServer(ready);
const script = resolve(import.meta.dirname, 'fixtures', 'proxy', 'activerecord_app.rb');

const run = async (url: string): Promise<string> => (await program('ruby', [script, url])).stdout;

describe.skipIf(!ready)(
  `isocheck proxy under ActiveRecord${ready ? '' : ' (skipped: apt-get install ruby-pg ruby-activerecord)'}`,
  () => {
    it('gives the application what a direct connection gives, and records a consistent history', async () => {
      const twins = await server.twins('activerecord');
      const { direct, proxied } = await twins.both(run);
      expect(proxied).toBe(direct);
      expect(JSON.parse(proxied)).toMatchObject({
        sum: [1000, 10],
        batches: [
          [2, 3, 4],
          [5, 6, 7],
          [8, 9, 10],
        ],
        after: [
          [3, 0],
          [4, 100],
        ],
        five: 103,
        items: [
          ['y', 5],
          ['a', 1],
          ['b', 2],
        ],
        dup: 'ActiveRecord::RecordNotUnique',
        threads: [110, 110, 110, 110],
      });
      const reads = await twins.reads();
      // Acct.lock.find(1) and find(2): LIMIT 1 by key, one row each, exact
      expect(reads[0]).toEqual([
        ['id = $1', false, 1],
        ['id = $1', false, 1],
      ]);
      const own = await check(twins.file);
      expect(own.verdict, own.reason).toBe('consistent');
    }, 150_000);
  },
);
