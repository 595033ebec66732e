/**
 * `npm run bench -- profile FILE [--iso SER] [--timeout S] [--naive [--exhaustive]] [--no-warmup] [--out DIR]`: CPU
 * profile of checking one history (the same as `node --cpu-prof`, through node:inspector so that only the check is
 * profiled, not the load). Writes DIR/<file>.cpuprofile (open in Chrome DevTools or speedscope) and prints the
 * functions with the most self time and the most inclusive time (a function counted once per sample, however deep its
 * recursion).
 */
import { Session } from 'node:inspector/promises';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { readHistory } from '../src/history/reader.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { checkHistory } from '../src/checker/check.js';
import { naiveCheck } from '../src/oracle/naive.js';
import { parseIsoOverride } from '../src/checker/levels.js';
import { UsageError } from './usage-error.js';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileSummary {
  totalMs: number;
  self: { name: string; ms: number; pct: number }[];
  inclusive: { name: string; ms: number; pct: number }[];
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Per generated line, segments [generated column, source index, source line] of a source map's mappings. */
function decodeMappings(mappings: string): number[][][] {
  const lines: number[][][] = [];
  let src = 0,
    srcLine = 0;
  for (const line of mappings.split(';')) {
    const segs: number[][] = [];
    let col = 0;
    for (const seg of line.split(',')) {
      if (!seg) continue;
      const vals: number[] = [];
      let shift = 0,
        value = 0;
      for (const ch of seg) {
        const d = B64.indexOf(ch);
        value += (d & 31) << shift;
        if (d & 32) shift += 5;
        else {
          vals.push(value & 1 ? -(value >>> 1) : value >>> 1);
          shift = 0;
          value = 0;
        }
      }
      col += vals[0];
      if (vals.length >= 4) {
        src += vals[1];
        srcLine += vals[2]; // vals[3] and vals[4]: source column and name, not used
        segs.push([col, src, srcLine]);
      }
    }
    lines.push(segs);
  }
  return lines;
}

const maps = new Map<string, { sources: string[]; lines: number[][][] } | null>();

/** The .ts file and line of a compiled dist/ position, through its .js.map (tsconfig sourceMap). */
function original(file: string, line: number, col: number): { file: string; line: number } | undefined {
  if (!maps.has(file)) {
    let m: { sources: string[]; lines: number[][][] } | null = null;
    try {
      if (existsSync(`${file}.map`)) {
        const raw = JSON.parse(readFileSync(`${file}.map`, 'utf8')) as {
          sources: string[];
          sourceRoot?: string;
          mappings: string;
        };
        m = {
          sources: raw.sources.map((s) => resolve(dirname(file), raw.sourceRoot ?? '', s)),
          lines: decodeMappings(raw.mappings),
        };
      }
    } catch {
      m = null;
    }
    maps.set(file, m);
  }
  const m = maps.get(file);
  const segs = m?.lines[line];
  if (!m || !segs || segs.length === 0) return undefined;
  let best = segs[0];
  for (const s of segs) if (s[0] <= col) best = s;
  return { file: m.sources[best[1]], line: best[2] + 1 };
}

function frameName(cf: CallFrame, root: string): string {
  let where = '';
  if (cf.url) {
    const file = cf.url.replace(/^file:\/\//, '');
    const o = cf.url.startsWith('file://') ? original(file, cf.lineNumber, cf.columnNumber) : undefined;
    where = o
      ? `${relative(root, o.file)}:${o.line}`
      : `${cf.url.startsWith('file://') ? relative(root, file) : cf.url}:${cf.lineNumber + 1}`;
  }
  return `${cf.functionName || '(anonymous)'}${where ? ` ${where}` : ''}`;
}

/** Time per function over the samples inside `entry` (e.g. checkHistory) and the garbage collector's. */
export function summarize(profile: CpuProfile, root: string, entry: string, top = 15): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const dt = (profile.timeDeltas[i] ?? 0) / 1000;
    const n = byId.get(id)!;
    const name = frameName(n.callFrame, root);
    let inside = name.startsWith('(garbage collector)');
    for (let cur: number | undefined = id; cur !== undefined && !inside; cur = parent.get(cur))
      inside = byId.get(cur)!.callFrame.functionName === entry;
    if (!inside) return;
    total += dt;
    self.set(name, (self.get(name) ?? 0) + dt);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const nm = frameName(byId.get(cur)!.callFrame, root);
      if (seen.has(nm)) continue;
      seen.add(nm);
      incl.set(nm, (incl.get(nm) ?? 0) + dt);
    }
  });
  const list = (m: Map<string, number>) =>
    [...m.entries()]
      .filter(
        ([n]) =>
          !/^\((root|program|idle)\)|^(runMicrotasks|processTicksAndRejections|runProfile) /.test(`${n} `) &&
          !/ node:/.test(n),
      )
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => ({ name, ms, pct: (100 * ms) / total }));
  return { totalMs: total, self: list(self), inclusive: list(incl) };
}

export async function runProfile(args: string[]): Promise<void> {
  const file = args.find((a, i) => !a.startsWith('--') && !['--iso', '--timeout', '--out'].includes(args[i - 1]));
  if (!file)
    throw new UsageError('usage: npm run bench -- profile FILE [--iso SER] [--timeout S] [--naive] [--out DIR]');
  const opt = (n: string) => {
    const i = args.indexOf(`--${n}`);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const isoText = opt('iso');
  const iso = isoText ? parseIsoOverride(isoText) : undefined;
  const timeoutMs = Number(opt('timeout') ?? 60) * 1000;
  const out = opt('out') ?? join('bench', '.histories', 'profiles');
  const naive = args.includes('--naive');
  await loadPredicateParser();
  const history = await readHistory(file);
  // Warm the JIT on the same history for a moment, so that the profile shows the steady state (small files only:
  // the checker may overrun a short budget by a lot on big ones, see bench/RESULTS.md).
  if (!args.includes('--no-warmup') && statSync(file).size < 4 * 2 ** 20) {
    if (naive) naiveCheck(history, { iso, maxWork: 2000, exhaustive: args.includes('--exhaustive') });
    else checkHistory(history, { iso, timeoutMs: 500, maxSteps: 200, explain: false, shrink: false });
  }
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 500 });
  await session.post('Profiler.start');
  const t0 = performance.now();
  let verdict: string;
  let stats = '';
  if (naive) {
    const r = naiveCheck(history, {
      iso,
      maxWork: Number.POSITIVE_INFINITY,
      exhaustive: args.includes('--exhaustive'),
    });
    verdict = r.verdict;
    stats = `work ${r.work}`;
  } else {
    const r = checkHistory(history, { iso, timeoutMs, explain: false, shrink: false });
    verdict = r.verdict;
    stats =
      `${r.stats.transactions} transactions, ${r.stats.events} events, ${r.stats.conflicts} conflicts ` +
      `(${r.stats.forcedWitnesses} forced), ${r.stats.extensions} extensions, ${r.stats.prefixes} ` +
      `prefixes, ${r.stats.saturationEdges} saturation edges${r.reason ? `; ${r.reason}` : ''}`;
  }
  const ms = performance.now() - t0;
  const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: CpuProfile };
  session.disconnect();
  mkdirSync(out, { recursive: true });
  const target = join(out, `${basename(file).replace(/\.ndjson(\.gz)?$/, '')}${naive ? '.naive' : ''}.cpuprofile`);
  writeFileSync(target, JSON.stringify(profile));
  const s = summarize(profile, process.cwd(), naive ? 'naiveCheck' : 'checkHistory');
  const lines = [
    `### Profile: \`${basename(file)}\`${isoText ? ` checked as ${isoText}` : ''}${naive ? ' (naive baseline)' : ''}`,
    '',
    `${naive ? 'naiveCheck' : 'checkHistory'}: ${verdict} in ${(ms / 1000).toFixed(2)} s (${stats}). Profile: ` +
      `\`${target}\` (${s.totalMs.toFixed(0)} ms sampled).`,
    '',
    '| self time | % | function |',
    '| --: | --: | :-- |',
    ...s.self.map((f) => `| ${f.ms.toFixed(0)} ms | ${f.pct.toFixed(1)} | \`${f.name}\` |`),
    '',
    '| inclusive time | % | function |',
    '| --: | --: | :-- |',
    ...s.inclusive.map((f) => `| ${f.ms.toFixed(0)} ms | ${f.pct.toFixed(1)} | \`${f.name}\` |`),
    '',
  ];
  console.log(lines.join('\n'));
}
