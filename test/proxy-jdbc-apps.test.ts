// isocheck proxy under JDBC idioms of real applications (test/fixtures/proxy/JdbcApps.java, pgjdbc from Debian's
// libpostgresql-jdbc-java): executeBatch in a transaction and in autocommit (a failing statement undoes the whole
// batch: one implicit transaction), getGeneratedKeys (RETURNING * appended by the driver: the recorder's hidden
// column must not show), an updatable ResultSet, a statement run past prepareThreshold (binary results); with the
// driver's defaults and with the settings that change what it sends (binary from the first run, rewritten batched
// inserts, the simple protocol, everything prepared). Run on a database directly and through the proxy on a twin:
// the same output, a consistent history. Skipped, with the reason, without java or the driver.
import { describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { check } from '../src/index.js';
import { which } from './helpers/which.js';
import { twinServer } from './helpers/twin-databases.js';
import { program } from './helpers/program.js';

const jdbcJar = ['/usr/share/java/postgresql.jar'].find((j) => existsSync(j));
const java = which('java');
const skip = !java
  ? 'no java (apt-get install default-jdk-headless)'
  : !jdbcJar
    ? 'the JDBC driver is not installed (apt-get install libpostgresql-jdbc-java)'
    : undefined;
const server = twinServer(skip === undefined);

async function runApp(url: URL, options = ''): Promise<string> {
  const base = `jdbc:postgresql://${url.hostname}:${url.port}${url.pathname}`;
  const jdbc = `${base}?connectTimeout=5&socketTimeout=30${options}`;
  const args = ['-cp', jdbcJar!, resolve(import.meta.dirname, 'fixtures', 'proxy', 'JdbcApps.java'), jdbc];
  args.push(decodeURIComponent(url.username || 'postgres'), decodeURIComponent(url.password));
  return (await program(java!, args)).stdout;
}

describe.skipIf(skip !== undefined)(
  `isocheck proxy under JDBC applications${skip ? ` (skipped: ${skip})` : ''}`,
  () => {
    // the driver's settings that change what goes on the wire: binary from the first run (BenchBase's TPC-C reads
    // timestamps and numeric), batched inserts rewritten into one multi-row INSERT, the simple protocol only,
    // every statement prepared
    it.each([
      ['its defaults', ''],
      ['prepareThreshold=-1', '&prepareThreshold=-1'],
      ['reWriteBatchedInserts=true', '&reWriteBatchedInserts=true'],
      ['preferQueryMode=simple', '&preferQueryMode=simple'],
      ['preferQueryMode=extendedCacheEverything', '&preferQueryMode=extendedCacheEverything'],
    ])(
      'gives pgjdbc with %s what a direct connection gives, and records a consistent history',
      async (_, options) => {
        const twins = await server.twins('jdbc_apps');
        const direct = await runApp(new URL(twins.direct), options);
        const proxied = await runApp(new URL(twins.proxy.url), options);
        expect(proxied).toBe(direct);
        // (what the driver does itself differs with its settings: in the simple protocol, a batch in autocommit
        // runs its statements one by one, the ones around the failing one committed)
        const batch = options.includes('simple') ? 'batch error 22012 [1, -3, 1]' : 'batch error 22012 [-3, -3, -3]';
        const rows = options.includes('simple')
          ? 'rows 1:101 2:102 3:103 4:99 5:100 6:99 7:777 8:100 9:100 10:100'
          : 'rows 1:101 2:102 3:103 4:100 5:100 6:100 7:777 8:100 9:100 10:100';
        const thirds = options.includes('simple')
          ? ['33.0000000000000000', '33.3333333333333333', '33.0000000000000000']
          : ['33.3333333333333333', '33.3333333333333333', '33.3333333333333333'];
        expect(proxied.split('\n')).toEqual([
          'batch [1, 1, 1]',
          'keys id=1 label=x qty=0',
          'batch keys [1, 1, 1] 2 3 4',
          batch,
          'updatable ok',
          // (run 5 on, the results come in binary: converted by the proxy)
          `prepared ${['33.6666666666666667', '34.0000000000000000', '34.3333333333333333', ...thirds]
            .concat(['259.0000000000000000'])
            .map((third, k) => {
              const i = k + 1;
              const t = `2024-03-0${i}T12:00:00.500Z`;
              return `${i}/${third}/${t}/2000-01-0${i}/a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1${i}/[${i}, -${i}]`;
            })
            .join(' ')}`,
          'copied 2',
          'copiedOut 6 x,0|b0,0|b1,1|b2,2|c1,5|c2,6|',
          rows,
          'items 1:x:0 2:b0:0 3:b1:1 4:b2:2 5:c1:5 6:c2:6',
          '',
        ]);
        await twins.reads();
        const own = await check(twins.file);
        expect(own.verdict, own.reason).toBe('consistent');
      },
      150_000,
    );
  },
);
