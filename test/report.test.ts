// HTML report (src/report): escaping and page safety without a browser; then, in Debian's Chromium (skipped
// with a message when /usr/bin/chromium is absent), reports of known anomalies and of a real workload
// violation render their graphs (transaction ids, so/wr/axiom/assumed edges), a click on a timeline bar shows
// the transaction's statements, hostile values show as text and run nothing, no network request is made, and
// a 10,000-transaction history opens quickly. Screenshots go to a temp folder, or with ISOCHECK_SCREENSHOTS=1 to
// test/screenshots/ (the committed ones the README shows), so that running the suite leaves the clone clean.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { checkHistory, type CheckResult } from '../src/checker/check.js';
import type { History } from '../src/history/history.js';
import { loadPredicateParser } from '../src/sql/predicate.js';
import { readHistory } from '../src/history/reader.js';
import { cleanText, escapeHtml, jsonForScript, truncateMiddle } from '../src/report/escape.js';
import { anomalyGraphs, caseSplitGraph } from '../src/report/graph.js';
import { renderLevelsReport, renderReport, reportFileFor, writeReport } from '../src/report/html.js';
import type { PageData } from '../src/report/page-data.js';
import { PAGE_SCRIPT } from '../src/report/page-script.js';
import { renderSvg, sanitizeSvg } from '../src/report/svg.js';
import { anomalyEdges } from '../src/checker/anomaly.js';
import { type LevelBoundary, levelBoundary } from '../src/checker/level-boundary.js';
import { ISOLATION_LEVELS } from '../src/history/format.js';
import { runCheckCommand } from '../src/cli/check-command.js';
import { levelVerdictText, strongestText } from '../src/report/levels.js';
import { renderBoundary } from '../src/cli/levels-output.js';
import { ins, loadLines, registerLines, sel, txn, upd } from './helpers/lines.js';

declare global {
  interface Window {
    __pwned?: unknown;
    __isocheck?: {
      ready: boolean;
      loadMs: number;
      transactions: number;
      barOf(
        id: string,
      ): { x: number; y: number; width: number; height: number; cx: number; cy: number; visible: boolean } | null;
      select(id: string): void;
      selected(): string | null;
      zoomTo(ids: string[]): void;
      fit(): void;
    };
  }
}

const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
const KNOWN = resolve('histories/known');
const SHOTS =
  process.env.ISOCHECK_SCREENSHOTS === '1'
    ? resolve('test/screenshots')
    : mkdtempSync(join(tmpdir(), 'isocheck-shots-'));
const dir = mkdtempSync(join(tmpdir(), 'isocheck-report-'));

beforeAll(async () => {
  await loadPredicateParser();
});

async function check(file: string): Promise<{ history: History; result: CheckResult }> {
  const history = await readHistory(file);
  return { history, result: checkHistory(history, {}) };
}

async function reportOf(file: string, name: string): Promise<{ path: string; history: History; result: CheckResult }> {
  const { history, result } = await check(file);
  const path = join(dir, `${name}.html`);
  await writeReport(path, history, result);
  return { path, history, result };
}

// A lost update (SI) whose values, label, meta and key are hostile: the graph and the details show them.
const PWN_SCRIPT = '<script>window.__pwned=1</script>';
const PWN_IMG = '"><img src=x onerror="window.__pwned=1">';
function hostileHistory(): string {
  const lines = [
    {
      kind: 'history',
      format: 'isocheck-history',
      version: 1,
      meta: { note: `</script><script>window.__pwned=1</script>`, database: PWN_IMG },
    },
    { kind: 'table', name: 't', key: ['id'], columns: { id: 'text', v: 'text' } },
    { kind: 'init', table: 't', rows: [{ id: PWN_IMG, v: PWN_SCRIPT }] },
    {
      kind: 'txn',
      id: 'T1',
      session: 1,
      seq: 1,
      iso: 'SI',
      status: 'committed',
      label: `<img src=x onerror=window.__pwned=1>\u2028`,
      events: [
        {
          op: 'select',
          table: 't',
          where: 'id = $1',
          params: [PWN_IMG],
          rows: [{ wid: 'init', row: { id: PWN_IMG, v: PWN_SCRIPT } }],
        },
        {
          op: 'update',
          table: 't',
          where: 'id = $1',
          params: [PWN_IMG],
          wid: 'T1.2',
          rows: [{ read: 'init', row: { id: PWN_IMG, v: `${PWN_SCRIPT}\u2029&amp;` } }],
        },
      ],
    },
    {
      kind: 'txn',
      id: 'T2',
      session: 2,
      seq: 1,
      iso: 'SI',
      status: 'committed',
      events: [
        {
          op: 'select',
          table: 't',
          where: 'id = $1',
          params: [PWN_IMG],
          rows: [{ wid: 'init', row: { id: PWN_IMG, v: PWN_SCRIPT } }],
        },
        {
          op: 'update',
          table: 't',
          where: 'id = $1',
          params: [PWN_IMG],
          wid: 'T2.2',
          rows: [{ read: 'init', row: { id: PWN_IMG, v: PWN_IMG } }],
        },
      ],
    },
    { kind: 'end', transactions: 2 },
  ];
  const file = join(dir, 'hostile.ndjson');
  writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
  return file;
}

/**
 * A write skew (T1, T2 at SER) whose two cases each close a cycle through a chain of `k` transactions, each in a
 * session of its own, reading what the previous one wrote: W0 -> C1 -> ... -> Ck -> T1 and V0 -> D1 -> ... -> T2.
 * T2 read y as W0 wrote it and T1 wrote y blind, so T1 before T2 forces T1 before W0 (and the other way round).
 */
function chainedWriteSkew(k: number): object[] {
  const txns = [];
  let session = 3;
  for (const [first, prefix, key, base] of [
    ['W0', 'C', 2, 100],
    ['V0', 'D', 1, 200],
  ] as const) {
    txns.push(txn(first, session++, 1, [upd(`${first}.1`, key, 'init', 5), ins(`${first}.2`, base, 0)]));
    for (let i = 1; i <= k; i++) {
      const read = i === 1 ? `${first}.2` : `${prefix}${i - 1}.2`;
      txns.push(
        txn(`${prefix}${i}`, session++, 1, [
          sel(base + i - 1, [{ wid: read, v: 0 }]),
          ins(`${prefix}${i}.2`, base + i, 0),
        ]),
      );
    }
  }
  txns.push(
    txn('T1', 1, 1, [sel(100 + k, [{ wid: `C${k}.2`, v: 0 }]), sel(1, [{ wid: 'V0.1', v: 5 }]), ins('T1.3', 2, 6)]),
  );
  txns.push(
    txn('T2', 2, 1, [sel(200 + k, [{ wid: `D${k}.2`, v: 0 }]), sel(2, [{ wid: 'W0.1', v: 5 }]), ins('T2.3', 1, 6)]),
  );
  return registerLines(
    [
      { id: 1, v: 0 },
      { id: 2, v: 0 },
    ],
    txns,
  );
}

describe('report without a browser', () => {
  it('escapes JSON for a script element and text for HTML', () => {
    const value = { a: '</script><script>x</script>', b: '\u2028\u2029', c: '<!-- & -->' };
    const json = jsonForScript(value);
    expect(json).not.toMatch(/[<>&\u2028\u2029]/);
    expect(JSON.parse(json)).toEqual(value);
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
    expect(cleanText('a\u0000b\ud800c')).toBe('a\\u0000b\ufffdc');
    expect(truncateMiddle('SELECT t WHERE id = 1 -> {"a":"long long long"} [T1.2]', 30)).toMatch(/…\s?.*\[T1\.2\]$/);
  });

  it('accepts only plain Graphviz SVG', async () => {
    const r = await renderSvg('digraph { a -> b [label=<x &lt; y>] }');
    expect('svg' in r && r.svg.startsWith('<svg')).toBe(true);
    expect(() => sanitizeSvg('<svg><script>alert(1)</script></svg>')).toThrow();
    expect(() => sanitizeSvg('<svg onload="alert(1)"></svg>')).toThrow();
    expect(() => sanitizeSvg('<svg><a xlink:href="javascript:alert(1)"><text>x</text></a></svg>')).toThrow();
    expect(() => sanitizeSvg('<svg><foreignObject><img src=x></foreignObject></svg>')).toThrow();
  });

  it('the page script parses', () => {
    expect(() => new Function(PAGE_SCRIPT)).not.toThrow();
  });

  it('draws a lost update as two cases with the axiom, so and assumed edges', async () => {
    const { history, result } = await check(join(KNOWN, 'lost-update.SI.ndjson'));
    const graphs = anomalyGraphs(history, result.anomalies[0], 'a0');
    expect(graphs.map((g) => g.title)).toEqual([
      'Case 1: suppose T1 commits before T2',
      'Case 2: suppose T2 commits before T1',
    ]);
    expect(graphs[0].steps.map((s) => `${s.kind} ${s.from}->${s.to}`)).toEqual([
      'axiom T1->init',
      'so init->T1',
      'assumed T1->T2',
    ]);
    expect(Object.values(graphs[0].nodes).sort()).toEqual(['T1', 'T2', 'init']);
  });

  it('a hostile history gives a self-contained page with its values only as escaped data', async () => {
    const { history, result } = await check(hostileHistory());
    expect(result.verdict).toBe('inconsistent');
    const html = await renderReport(history, result);
    expect(html.match(/<script/g)).toHaveLength(2);
    expect(html).not.toContain('window.__pwned=1</script>');
    expect(html).not.toContain('<img');
    // The JSON and the SVG texts hold no '<' (escaped), so every '<' left starts a real tag: none loads or runs
    // anything.
    const tags = html.match(/<[a-zA-Z][^>]*>/g) ?? [];
    expect(tags.filter((t) => /\s(src|href|xlink:href|on\w+)\s*=/i.test(t))).toEqual([]);
    expect(html).not.toMatch(/<link|@import|url\(/i);
    const urls = html.match(/https?:\/\/[^\s"'<>)]+/g) ?? [];
    expect(urls.filter((u) => !u.startsWith('http://www.w3.org/'))).toEqual([]);
    expect(html).toContain("default-src 'none'");
  });

  it('the page script is the typed browser module (page/*.ts), each part standing alone', () => {
    // Each part is inlined as its function's text (page-script.ts): it may import types only, and hold nothing
    // outside its one exported function (a constant beside it would be missing in the page).
    const pageDir = resolve('src/report/page');
    // context.ts and parts.ts hold types only
    const parts = readdirSync(pageDir).filter((f) => f.endsWith('.ts') && f !== 'context.ts' && f !== 'parts.ts');
    expect(parts.length).toBeGreaterThanOrEqual(6);
    for (const f of parts) {
      const source = readFileSync(join(pageDir, f), 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
      const imports = source.match(/^import .*$/gm) ?? [];
      expect(
        imports.filter((l) => !l.startsWith('import type ')),
        f,
      ).toEqual([]);
      const topLevel = source
        .split('\n')
        .filter((l) => /^[^\s})/]/.test(l) && !/^(import type|type|interface) /.test(l));
      expect(topLevel.length, `${f}: ${topLevel.join(' | ')}`).toBe(1);
      expect(topLevel[0], f).toMatch(/^export function \w+\(/);
    }
    for (const name of ['runPage', 'createDom', 'renderHeader', 'createExplanations', 'renderLevels', 'createTimeline'])
      expect(PAGE_SCRIPT).toContain(name);
    // and it type-checks on its own as browser code: the DOM library, no Node.js types
    const tsc = resolve('node_modules/typescript/bin/tsc');
    expect(() =>
      execFileSync(process.execPath, [tsc, '-p', 'src/report/page/tsconfig.json'], { encoding: 'utf8', stdio: 'pipe' }),
    ).not.toThrow();
  });

  it('draws a case split as an overview (the pair, each order and the cycle it forces) before the cases', async () => {
    const { result } = await check(join(KNOWN, 'write-skew.SER.ndjson'));
    const a = result.anomalies[0];
    if (!('cases' in a)) throw new Error('a case split');
    const g = caseSplitGraph(a, 'a0s');
    expect(g.title).toBe('The case split');
    expect(Object.values(g.cases ?? {})).toEqual([0, 1]);
    expect(g.dot).toContain('T1 -axiom-&gt; init -so-&gt; T1');
    expect(g.dot).toContain('suppose T2 first');
    const svg = await renderSvg(g.dot);
    expect('svg' in svg && svg.svg).toContain('Case 2: suppose T2 commits before T1');
  });

  it('draws the orders a case split derives on the way as facts its cases use', async () => {
    // Synthetic: supposing T3 before T1 forced a cycle, so T1 commits before T3, which both cases of T1, T2 use.
    const so = (from: string, to: string) => ({ from, to, kind: 'so' as const });
    const assumed = (from: string, to: string) => ({ from, to, kind: 'assumed' as const });
    const g = caseSplitGraph(
      {
        type: 'write-skew',
        by: 'cases',
        pair: ['T1', 'T2'],
        txns: ['T1', 'T2', 'T3'],
        readers: [],
        cases: [
          { assume: { before: 'T3', after: 'T1' }, edges: [assumed('T3', 'T1'), so('T1', 'T3')] },
          { assume: { before: 'T1', after: 'T2' }, edges: [assumed('T1', 'T3'), so('T3', 'T1')] },
          { assume: { before: 'T2', after: 'T1' }, edges: [assumed('T1', 'T3'), so('T3', 'T2'), so('T2', 'T1')] },
        ],
      },
      'x',
    );
    expect(g.dot).toContain('✗ impossible: so T1 commits before T3');
    expect(g.dot).toContain('  c0 -> d0');
    expect(g.dot.match(/ {2}d0 -> c\d/g)).toEqual(['  d0 -> c1', '  d0 -> c2']);
    const svg = await renderSvg(g.dot);
    expect('svg' in svg).toBe(true);
  });

  it('draws the case split of a stuck search (a write skew among 92 transactions): the split, its cases', async () => {
    // T1 and T2 each read what the other writes; 90 unrelated writers make the history too large for trying every
    // pair, so the search's stuck frontier names the pair (explain/cases.ts, explainStuckPair)
    const history = await loadLines(
      registerLines(
        [
          { id: 1, v: 0 },
          { id: 2, v: 0 },
        ],
        [
          txn('T1', 1, 1, [sel(1, [{ wid: 'init', v: 0 }]), sel(2, [{ wid: 'init', v: 0 }]), ins('T1.3', 1, 1)]),
          txn('T2', 2, 1, [sel(1, [{ wid: 'init', v: 0 }]), sel(2, [{ wid: 'init', v: 0 }]), ins('T2.3', 2, 1)]),
          ...Array.from({ length: 90 }, (_, i) => txn(`F${i + 1}`, 3, i + 1, [ins(`F${i + 1}.1`, 100 + i, 0)])),
        ],
      ),
    );
    const result = checkHistory(history, {});
    const a = result.anomalies[0];
    expect(a.type === 'write-skew' && 'fromStuck' in a && a.fromStuck).toBe(true);
    const html = await renderReport(history, result);
    expect(html.match(/<template id="svg-\d+">/g)).toHaveLength(3);
    const data = JSON.parse(html.match(/id="isocheck-data">(.*?)<\/script>/s)![1]) as PageData;
    expect(data.anomalies[0].graphs.map((g) => [g.title, g.svg !== undefined])).toEqual([
      ['The case split', true],
      ['Case 1: suppose T1 commits before T2', true],
      ['Case 2: suppose T2 commits before T1', true],
    ]);
    expect(Object.values(data.anomalies[0].graphs[0].cases ?? {})).toEqual([0, 1]);
  });

  it('draws a case whose cycle passes through many transactions with small boxes', async () => {
    const history = await loadLines(chainedWriteSkew(14));
    const result = checkHistory(history, {});
    const a = result.anomalies[0];
    expect(a.type).toBe('write-skew');
    const graphs = anomalyGraphs(history, a, 'a0');
    expect(graphs.map((g) => g.compact)).toEqual([true, true]);
    expect(Object.values(graphs[0].nodes)).toEqual(expect.arrayContaining(['T1', 'W0', 'C7', 'C14', 'T2']));
    expect(graphs[0].steps.filter((s) => s.kind === 'wr')).toHaveLength(15);
    expect(graphs[0].dot).not.toContain('SELECT');
  });

  it('a level boundary left unknown says so, in the terminal and in the report', async () => {
    // (built as data: every level stopped by the time limit)
    const { history, result } = await check(join(KNOWN, 'long-fork.PC.ndjson'));
    const stopped: CheckResult = { ...result, verdict: 'unknown', reason: 'stopped by the time limit', anomalies: [] };
    const boundary: LevelBoundary = {
      uniform: ISOLATION_LEVELS.map((level) => ({ level, verdict: 'unknown', result: stopped })),
      checks: 6,
    };
    expect(strongestText(boundary)).toBe('none known (RC is unknown)');
    expect(renderBoundary('h', boundary)).toContain('strongest: none known (RC is unknown)');
    const html = await renderLevelsReport(history, boundary);
    expect(html).toContain('"strongestText":"none known (RC is unknown)"');
  });

  it('names one report per history when several are checked', () => {
    expect(reportFileFor('out.html', 'h/a.ndjson', 1)).toBe('out.html');
    expect(reportFileFor('out.html', 'h/lost-update.SI.ndjson.gz', 2)).toBe('out.lost-update.SI.html');
    expect(reportFileFor('report', 'h/a.ndjson', 2)).toBe('report.a.html');
  });
});

describe.skipIf(!hasChromium)('report in Chromium', () => {
  let browser: Browser;

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
  });
  afterAll(async () => {
    await browser?.close();
  });

  interface Opened {
    page: Page;
    requests: string[];
    errors: string[];
    ms: number;
  }
  async function open(path: string, viewport = { width: 1400, height: 900 }): Promise<Opened> {
    const page = await browser.newPage({ viewport });
    const requests: string[] = [];
    const errors: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    const started = Date.now();
    await page.goto(pathToFileURL(path).href);
    await page.waitForFunction(() => window.__isocheck?.ready === true, undefined, { timeout: 20_000 });
    return { page, requests, errors, ms: Date.now() - started };
  }
  function expectOffline(o: Opened): void {
    expect(o.requests.filter((u) => !u.startsWith('file:') && !u.startsWith('data:'))).toEqual([]);
    expect(o.errors).toEqual([]);
  }
  // A box's text lines (Graphviz's <title> holds our node id, not shown).
  const nodeTexts = (page: Page) =>
    page.$$eval('.graph svg g.node', (gs) =>
      gs.map((g) => [...g.querySelectorAll('text')].map((t) => t.textContent ?? '').join('\n')),
    );
  const edgeTexts = (page: Page) => page.$$eval('.graph svg g.edge text', (ts) => ts.map((t) => t.textContent ?? ''));
  async function clickBar(page: Page, id: string): Promise<void> {
    await page.locator('#tl').scrollIntoViewIfNeeded();
    const bar = await page.evaluate((txn) => window.__isocheck!.barOf(txn), id);
    expect(bar?.visible).toBe(true);
    await page.mouse.click(bar!.cx, bar!.cy);
  }

  const cases: [string, string[], string[]][] = [
    ['lost-update.SI', ['T1', 'T2', 'init'], ['1. axiom SI', '2. so', 'assumed']],
    ['write-skew.SER', ['T1', 'T2', 'init'], ['1. axiom SER', '2. so', 'assumed']],
    ['long-fork.PC', ['T1', 'T2', 'T3', 'T4', 'init'], ['1. axiom PC', '2. so', 'assumed', 'wr']],
    ['missing-initial-row.SER', ['T1'], ['not returned']],
    ['fractured-read.RA', ['T1', 'T2', 'init'], ['1. axiom RA', '2. so']],
  ];
  it.each(cases)('renders %s with its transactions and edges', async (name, txns, labels) => {
    const { path } = await reportOf(join(KNOWN, `${name}.ndjson`), name);
    const o = await open(path);
    expect(await o.page.textContent('.verdict')).toBe('INCONSISTENT');
    const nodes = await nodeTexts(o.page);
    for (const id of txns) expect(nodes.some((t) => t.startsWith(id))).toBe(true);
    const edges = await edgeTexts(o.page);
    for (const l of labels) expect(edges.some((t) => t.startsWith(l))).toBe(true);
    expect(await o.page.locator('.anomaly .words').count()).toBeGreaterThan(0);
    await o.page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
    expectOffline(o);
    await o.page.close();
  });

  it('a click on a timeline bar shows the statements; a wid leads to its writer', async () => {
    const { path } = await reportOf(join(KNOWN, 'long-fork.PC.ndjson'), 'long-fork-click');
    const o = await open(path);
    await clickBar(o.page, 'T3');
    expect(await o.page.evaluate(() => window.__isocheck!.selected())).toBe('T3');
    const details = (await o.page.textContent('#details')) ?? '';
    expect(details).toContain('T3');
    expect(details).toContain('SELECT');
    expect(details).toContain('{"id":1,"v":1}');
    await o.page.getByRole('button', { name: 'T1.1' }).click();
    expect(await o.page.evaluate(() => window.__isocheck!.selected())).toBe('T1');
    expect(await o.page.textContent('#details')).toContain('INSERT');
    // A box in a graph selects its transaction too.
    await o.page.locator('.graph svg g.node', { hasText: 'session 2 #1' }).first().click();
    expect(await o.page.evaluate(() => window.__isocheck!.selected())).toBe('T2');
    await clickBar(o.page, 'T4');
    await o.page.locator('.tl-layout').screenshot({ path: join(SHOTS, 'timeline-details.png') });
    expectOffline(o);
    await o.page.close();
  });

  it('a consistent history shows its witness commit order on the timeline', async () => {
    const { path, result } = await reportOf(join(KNOWN, 'serial-chain.SER.ndjson'), 'serial-chain');
    expect(result.verdict).toBe('consistent');
    const o = await open(path);
    expect(await o.page.textContent('.verdict')).toBe('CONSISTENT');
    expect(await o.page.textContent('body')).toContain(result.commitOrder!.join(', '));
    await clickBar(o.page, 'T2');
    expect(await o.page.textContent('#details')).toContain(`#${result.commitOrder!.indexOf('T2') + 1} of 3`);
    await o.page.screenshot({ path: join(SHOTS, 'serial-chain-consistent.png'), fullPage: true });
    expectOffline(o);
    await o.page.close();
  });

  it('draws a case split: the overview links each order to its case, the cases to their cycles', async () => {
    const { path } = await reportOf(join(KNOWN, 'write-skew.SER.ndjson'), 'write-skew-split');
    const o = await open(path);
    const split = o.page.locator('.graph.split svg');
    expect(await split.locator('g.node.case').count()).toBe(2);
    const texts = (await split.locator('text').allTextContents()).join('\n');
    expect(texts).toContain('Case 1: suppose T1 commits before T2');
    expect(texts).toContain('suppose T2 first');
    expect(await o.page.locator('.case h4').allTextContents()).toEqual([
      'The case split',
      'Case 1: suppose T1 commits before T2',
      'Case 2: suppose T2 commits before T1',
    ]);
    expect(await o.page.locator('.anomaly .words').first().textContent()).toContain(
      'suppose T2 commits before T1: a cycle of 2 edges is forced (case 2 below)',
    );
    await split.locator('g.node.case').nth(1).click();
    await expect
      .poll(() => o.page.locator('.case.flash h4').textContent())
      .toBe('Case 2: suppose T2 commits before T1');
    await o.page.locator('.anomaly').screenshot({ path: join(SHOTS, 'write-skew-case-split.png') });
    expectOffline(o);
    await o.page.close();
  });

  it('draws a case split through 16 transactions per case with small boxes', async () => {
    const history = await loadLines(chainedWriteSkew(14));
    const result = checkHistory(history, {});
    const path = join(dir, 'chained-write-skew.html');
    await writeReport(path, history, result);
    const o = await open(path);
    expect(await o.page.locator('.graph svg').count()).toBe(3);
    expect(await o.page.locator('.graph-error').count()).toBe(0);
    const nodes = await nodeTexts(o.page);
    for (const id of ['T1', 'T2', 'W0', 'C14', 'V0', 'D14']) expect(nodes.some((t) => t.startsWith(id))).toBe(true);
    await o.page.locator('.graph svg g.node', { hasText: 'C14' }).first().click();
    expect(await o.page.evaluate(() => window.__isocheck!.selected())).toBe('C14');
    expectOffline(o);
    await o.page.close();
  });

  it('check --levels --report shows the level boundary from the data the terminal prints', async () => {
    const file = resolve('histories/corpus/smallbank-si-as-ser-s4-t20-seed1.ndjson.gz');
    const path = join(dir, 'levels.html');
    const logs: string[] = [];
    const spy = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void logs.push(a.join(' ')));
    try {
      expect(await runCheckCommand([file], { levels: true, report: path })).toBe(0);
    } finally {
      spy.mockRestore();
    }
    expect(logs.join('\n')).toContain(`report: ${path}`);
    const boundary = await levelBoundary(await readHistory(file));
    const o = await open(path);
    expect(await o.page.textContent('.verdict')).toBe('STRONGEST: SI');
    expect(await o.page.locator('.level-strip .level-mark').allTextContents()).toEqual([
      'RC \u2713',
      'RA \u2713',
      'CC \u2713',
      'PC \u2713',
      'SI \u2713',
      'SER \u2717',
    ]);
    // each row: the level, its mark and the words `check --levels` prints after it (report/levels.ts)
    const rows = o.page.locator('tr.level-row');
    expect(await rows.count()).toBe(6);
    for (const [i, v] of boundary.uniform.entries()) {
      const cells = rows.nth(i).locator('td');
      expect(await cells.nth(0).textContent()).toBe(v.level);
      expect(await cells.nth(2).textContent()).toContain(levelVerdictText(v));
    }
    expect(await rows.nth(5).textContent()).toContain('WRITE SKEW');
    expect(await o.page.textContent('.levels-boundary .strongest')).toBe('Strongest level: SI');
    // the configuration by label, and why WriteCheck stays at SI: its check at SER, drawn
    expect(await o.page.textContent('.levels-boundary pre.spec')).toBe(boundary.byLabel!.spec);
    const writeCheck = o.page.locator('table.by-label tr[data-label="WriteCheck"]');
    expect(await writeCheck.textContent()).toContain('SI');
    expect(await writeCheck.textContent()).toContain('\u2717 inconsistent: WRITE SKEW');
    await writeCheck.locator('details.level-evidence > summary').click();
    expect(await writeCheck.locator('.graph svg').count()).toBeGreaterThan(0);
    // why not SER: the explanation, drawn; the timeline shows the configuration's commit order
    expect(await o.page.textContent('#why-not')).toBe('Why not SER');
    expect(await o.page.locator('#anomaly-0 .graph svg').count()).toBe(3);
    expect(await o.page.textContent('body')).toContain(boundary.byLabel!.result.commitOrder!.join(', '));
    await o.page.locator('.levels-boundary').screenshot({ path: join(SHOTS, 'levels.png') });
    expectOffline(o);
    await o.page.close();
  });

  it('hostile values display as text and run nothing', async () => {
    const path = join(dir, 'hostile.html');
    const { history, result } = await check(hostileHistory());
    await writeReport(path, history, result);
    const o = await open(path);
    await clickBar(o.page, 'T1');
    await o.page.waitForTimeout(300);
    expect(await o.page.evaluate(() => window.__pwned)).toBeUndefined();
    expect(await o.page.locator('img').count()).toBe(0);
    expect(await o.page.locator('script').count()).toBe(2);
    const details = (await o.page.textContent('#details')) ?? '';
    expect(details).toContain(PWN_SCRIPT);
    expect(details).toContain(JSON.stringify({ id: PWN_IMG, v: PWN_SCRIPT }));
    expect(details).toContain('<img src=x onerror=window.__pwned=1>');
    const nodes = (await nodeTexts(o.page)).join('\n');
    expect(nodes).toContain('<img src=x onerror=window.__pwned=1>');
    expect(nodes).toContain('{"id":"\\"><img src=x onerror=\\"window._');
    expect(nodes).toContain('</script>"} [init]');
    expect(nodes).toContain('&amp;"} (was init)');
    expect(await o.page.textContent('body')).toContain('</script><script>window.__pwned=1</script>');
    await o.page.screenshot({ path: join(SHOTS, 'hostile-values.png'), fullPage: true });
    expectOffline(o);
    await o.page.close();
  });

  it('a real workload violation (TPC-C at RC declared SER, else SmallBank SI declared SER) renders', async (ctx) => {
    const { openDatabase } = await import('../src/db/connect.js');
    const { runWorkload } = await import('../src/cli/run-command.js');
    let db: Awaited<ReturnType<typeof openDatabase>>;
    try {
      db = await openDatabase({});
    } catch (e) {
      console.warn(`report workload test SKIPPED: no PostgreSQL (${(e as Error).message})`);
      ctx.skip();
      return;
    }
    let found: { path: string; history: History; result: CheckResult } | undefined;
    try {
      const attempts = [
        { workload: 'tpcc', iso: 'rc', declare: 'ser', seed: '1' },
        { workload: 'tpcc', iso: 'rc', declare: 'ser', seed: '2' },
        { workload: 'smallbank', iso: 'si', declare: 'ser', seed: '1' },
        { workload: 'smallbank', iso: 'si', declare: 'ser', seed: '2' },
        { workload: 'smallbank', iso: 'si', declare: 'ser', seed: '3' },
      ];
      for (const a of attempts) {
        const out = join(dir, `${a.workload}-${a.seed}.ndjson`);
        await runWorkload({ ...a, sessions: 3, txns: 15, out, progress: false, log: () => {} }, db);
        const r = await reportOf(out, `${a.workload}-${a.seed}`);
        console.log(
          `report workload test: ${a.workload} ${a.iso} declared ${a.declare} seed ${a.seed}: ` +
            `${r.result.verdict}${r.result.anomalies[0] ? ` (${r.result.anomalies[0].type})` : ''}`,
        );
        if (
          r.result.verdict === 'inconsistent' &&
          r.result.anomalies[0] &&
          anomalyEdges(r.result.anomalies[0]).length
        ) {
          found = r;
          break;
        }
      }
    } finally {
      await db.close();
    }
    expect(found).toBeDefined();
    const a = found!.result.anomalies[0];
    const o = await open(found!.path);
    const nodes = await nodeTexts(o.page);
    for (const id of new Set(anomalyEdges(a).flatMap((e) => [e.from, e.to])))
      expect(nodes.some((t) => t.startsWith(id))).toBe(true);
    const edges = await edgeTexts(o.page);
    expect(edges.some((t) => /^\d+\. axiom/.test(t))).toBe(true);
    expect(edges.some((t) => /^(\d+\. )?(wr|so)/.test(t))).toBe(true);
    const involved = a.txns[0];
    await clickBar(o.page, involved);
    expect(await o.page.textContent('#details')).toContain(involved);
    await o.page.screenshot({ path: join(SHOTS, 'workload-violation.png'), fullPage: true });
    expectOffline(o);
    await o.page.close();
  });

  it('a 10,000-transaction history opens quickly', async () => {
    // Synthetic: 8 sessions each updating its own row; the check result is built directly (the checker's
    // speed is not what is measured), as consistent, with the witness commit order by end time.
    const N = 10_000;
    const S = 8;
    const lines: object[] = [
      { kind: 'history', format: 'isocheck-history', version: 1, meta: { workload: 'synthetic', sessions: S } },
      { kind: 'table', name: 't', key: ['id'], columns: { id: 'int4', v: 'int4' } },
      { kind: 'init', table: 't', rows: Array.from({ length: S }, (_, i) => ({ id: i + 1, v: 0 })) },
    ];
    const last = Array<string>(S).fill('init');
    const value = Array<number>(S).fill(0);
    const seq = Array<number>(S).fill(0);
    const clock = Array<number>(S).fill(0);
    const levels = ['SER', 'SI', 'RC', 'PC'];
    for (let i = 0; i < N; i++) {
      const s = i % S;
      const id = `s${s + 1}.${++seq[s]}`;
      const begin = clock[s] + 0.3 + (i % 7) * 0.1;
      const end = begin + 1 + (i % 5) * 0.4;
      clock[s] = end;
      const aborted = i % 97 === 5;
      lines.push({
        kind: 'txn',
        id,
        session: s + 1,
        seq: seq[s],
        iso: levels[i % 4],
        status: aborted ? 'aborted' : 'committed',
        label: ['NewOrder', 'Payment', 'Delivery'][i % 3],
        begin: Math.round(begin * 100) / 100,
        end: Math.round(end * 100) / 100,
        events: [
          {
            op: 'select',
            table: 't',
            where: 'id = $1',
            params: [s + 1],
            rows: [{ wid: last[s], row: { id: s + 1, v: value[s] } }],
          },
          {
            op: 'update',
            table: 't',
            where: 'id = $1',
            params: [s + 1],
            wid: `${id}.2`,
            rows: [{ read: last[s], row: { id: s + 1, v: seq[s] } }],
          },
        ],
      });
      if (!aborted) {
        last[s] = `${id}.2`;
        value[s] = seq[s];
      }
    }
    lines.push({ kind: 'end', transactions: N });
    const file = join(dir, 'large.ndjson');
    writeFileSync(file, `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const history = await readHistory(file);
    const committed = history.txns.filter((t) => t.status === 'committed');
    const result: CheckResult = {
      verdict: 'consistent',
      anomalies: [],
      commitOrder: [...committed].sort((a, b) => a.end! - b.end!).map((t) => t.id),
      notes: ['synthetic result (not checked)'],
      stats: {
        transactions: N,
        committed: committed.length,
        aborted: N - committed.length,
        unknown: 0,
        sessions: S,
        events: 2 * N,
        reads: 2 * N,
        keys: S,
        conflicts: 0,
        forcedWitnesses: 0,
        prunedChoices: 0,
        saturationEdges: 0,
        extensions: 0,
        prefixes: 0,
        timeMs: 0,
      },
    };
    const path = join(dir, 'large.html');
    const started = Date.now();
    await writeReport(path, history, result);
    const writeMs = Date.now() - started;
    const o = await open(path);
    const loadMs = await o.page.evaluate(() => window.__isocheck!.loadMs);
    console.log(
      `report of ${N} transactions: written in ${writeMs} ms (${(readFileSync(path).length / 1e6).toFixed(1)} MB), ` +
        `opened in ${o.ms} ms (page script ${loadMs.toFixed(0)} ms)`,
    );
    expect(o.ms).toBeLessThan(15_000);
    expect(await o.page.evaluate(() => window.__isocheck!.transactions)).toBe(N);
    await o.page.evaluate(() => window.__isocheck!.zoomTo(['s3.600', 's4.600']));
    await clickBar(o.page, 's3.600');
    expect(await o.page.textContent('#details')).toContain('UPDATE');
    await o.page.screenshot({ path: join(SHOTS, 'large-10000-zoomed.png') });
    await o.page.evaluate(() => window.__isocheck!.fit());
    await o.page.locator('.tl-layout').screenshot({ path: join(SHOTS, 'large-10000.png') });
    expectOffline(o);
    await o.page.close();
  });
});

if (!hasChromium) {
  describe('report in Chromium', () => {
    it.skip(`SKIPPED: ${CHROMIUM} is not installed (apt-get install -y chromium)`, () => {});
  });
  console.warn(`report browser tests SKIPPED: ${CHROMIUM} is not installed (apt-get install -y chromium)`);
}
