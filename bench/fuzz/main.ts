/**
 * `npm run fuzz -- [--n N] [--seed S] [--timeout SECONDS] [--out DIR]`: a long fuzzing campaign
 * (campaign.ts; the suite runs a short one in test/fuzz.test.ts). Prints progress and the figures; writes each
 * failing mutant to DIR (default fuzz-failures/) with what was done to it; exit 1 when any failure was found.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCampaign, type FuzzStats } from './campaign.js';

const USAGE = 'usage: npm run fuzz -- [--n N (default 100000)] [--seed S] [--timeout SECONDS (default 2)] [--out DIR]';

function parse(argv: string[]): { n: number; seed: string; timeout: number; out: string } {
  const o = { n: 100_000, seed: 'isocheck-fuzz', timeout: 2, out: 'fuzz-failures' };
  for (let i = 0; i < argv.length; i++) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (flag === '--help' || flag === '-h') {
      console.log(USAGE);
      process.exit(0);
    }
    if (value === undefined) throw new Error(`${flag}: a value is missing`);
    i++;
    if (flag === '--n') o.n = Number(value);
    else if (flag === '--seed') o.seed = value;
    else if (flag === '--timeout') o.timeout = Number(value);
    else if (flag === '--out') o.out = value;
    else throw new Error(`unknown option ${flag}`);
  }
  if (!Number.isInteger(o.n) || o.n < 1) throw new Error(`--n ${o.n}: expected a positive integer`);
  if (!(o.timeout > 0)) throw new Error(`--timeout ${o.timeout}: expected a positive number of seconds`);
  return o;
}

const line = (s: FuzzStats): string =>
  `${s.tried} tried: ${s.errors} refused, ${s.consistent} consistent, ${s.inconsistent} ` +
  `inconsistent, ${s.unknown} unknown; ` +
  `oracle compared ${s.oracleCompared}; failures ${JSON.stringify(s.failures)}; max ${Math.round(s.maxMs)} ms`;

let opts: ReturnType<typeof parse>;
try {
  opts = parse(process.argv.slice(2));
} catch (e) {
  console.error(`fuzz: ${(e as Error).message}\n${USAGE}`);
  process.exit(2);
}
const started = Date.now();
const { stats, failures } = await runCampaign({
  n: opts.n,
  seed: opts.seed,
  timeoutMs: opts.timeout * 1000,
  graceMs: 2000,
  oracleMaxTxns: 8,
  onProgress: (s) => {
    if (s.tried % 5000 === 0) console.log(`  ${line(s)} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  },
});
console.log(line(stats));
console.log(
  `${((Date.now() - started) / 1000).toFixed(1)} s; malformed by the documents: ${stats.malformed}, ` +
    `ill-formed reads: ${stats.illFormed}`,
);
if (failures.length > 0) {
  mkdirSync(opts.out, { recursive: true });
  failures.forEach((f, i) => {
    const base = join(opts.out, `${String(i + 1).padStart(4, '0')}-${f.kind}`);
    writeFileSync(`${base}.ndjson`, f.text);
    writeFileSync(`${base}.txt`, `source: ${f.source}\nmutation: ${f.mutation}\n${f.detail}\n`);
  });
  console.log(`${failures.length} failures written to ${opts.out}/`);
  process.exitCode = 1;
}
