// isocheck proxy under Perl's DBI (DBD::Pg) and PHP's PDO (pdo_pgsql), from Debian's packages: both on libpq,
// each with its own way of preparing (DBD::Pg prepares on the server and drops its statements with SQL DEALLOCATE
// when they are freed; PDO prepares on the server, or inlines the values when asked to emulate). Each script
// (test/fixtures/proxy/) runs on a database directly and through the proxy on a twin: what it prints, and what it
// writes to stderr, are the same, and the history is consistent. Skipped, with the reason, when one is missing.
import { describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { check } from '../src/index.js';
import { twinServer } from './helpers/twin-databases.js';
import { program } from './helpers/program.js';

const fixtures = resolve(import.meta.dirname, 'fixtures', 'proxy');
const works = (cmd: string, args: string[]): boolean =>
  spawnSync(cmd, args, { stdio: 'ignore', timeout: 10_000 }).status === 0;
const perl = works('perl', ['-MDBD::Pg', '-e', '1']);
const php = works('php', ['-r', 'exit(extension_loaded("pdo_pgsql") ? 0 : 1);']);

const server = twinServer(perl || php);

/** What the program printed and what it wrote to stderr. */
async function run(cmd: string, script: string, url: string): Promise<string> {
  const u = new URL(url);
  const args = [join(fixtures, script), u.hostname, u.port, u.pathname.slice(1)];
  const { stdout, stderr } = await program(cmd, args, { env: { ...process.env, PGPASSWORD: u.password } });
  return `${stdout}--- stderr\n${stderr}`;
}

async function directAndProxied(cmd: string, script: string, name: string) {
  const twins = await server.twins(name);
  const { direct, proxied } = await twins.both((url) => run(cmd, script, url));
  return { direct, proxied, verdict: await check(twins.file) };
}

describe.skipIf(!perl)(
  `isocheck proxy under DBD::Pg${perl ? '' : ' (skipped: apt-get install libdbd-pg-perl)'}`,
  () => {
    it('gives the application what a direct connection gives, and records a consistent history', async () => {
      const { direct, proxied, verdict } = await directAndProxied('perl', 'dbdpg_app.pl', 'dbdpg');
      expect(proxied).toBe(direct);
      // (its statements freed at the end: DEALLOCATE of names the client prepared in the protocol, no error)
      expect(proxied).toMatch(/dup 23505\nlike 2\n--- stderr\n$/);
      expect(verdict.verdict, verdict.reason).toBe('consistent');
    }, 150_000);
  },
);

describe.skipIf(!php)(
  `isocheck proxy under PHP PDO${php ? '' : ' (skipped: apt-get install php-cli php-pgsql)'}`,
  () => {
    it('gives the application what a direct connection gives, and records a consistent history', async () => {
      const { direct, proxied, verdict } = await directAndProxied('php', 'pdo_app.php', 'pdo');
      expect(proxied).toBe(direct);
      expect(proxied).toContain('updated 1\nid 1\nid 2\nlast 2\n');
      expect(verdict.verdict, verdict.reason).toBe('consistent');
    }, 150_000);
  },
);
