/**
 * `isocheck check FILE --report out.html`: one self-contained HTML file (inline CSS and JS, no network) with
 * the verdict and configuration, each anomaly's explanation as a graph (Graphviz -> SVG at report time) with
 * the same explanation in words beside it, and a timeline of the whole history (canvas; click a transaction
 * for its statements; the witness commit order for a consistent history).
 *
 *   History + CheckResult -> page data (JSON, escaped for <script>) + SVGs (graph.ts -> svg.ts) -> page.ts
 *   History + LevelBoundary (--levels) -> the same, with the boundary (`levels`) and each level's evidence
 *
 * The page data's type is page-data.ts, which the page script (page/*.ts) reads with; it builds every text node
 * from the JSON with textContent; the SVGs are checked by svg.ts.
 */
import { writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { anomalyEdges, type Anomaly, type Edge } from '../checker/anomaly.js';
import { historyStats, type CheckResult } from '../checker/result.js';
import type { LevelBoundary, LevelVerdict } from '../checker/level-boundary.js';
import {
  anomalyMessage,
  anomalyName,
  conflictText,
  edgeReason,
  literatureNames,
  missingVersions,
  renderAnomaly,
} from '../checker/explain/explain.js';
import type { History } from '../history/history.js';
import { type AnomalyGraph, anomalyGraphs, caseSplitGraph, edgeLabel, LEVEL_COLORS } from './graph.js';
import { levelVerdictText, strongestText } from './levels.js';
import type { PageAnomaly, PageData, PageEdge, PageGraph, PageLevelCheck, PageLevels } from './page-data.js';
import { pageHtml } from './page.js';
import { labelLevels, metaEntries } from './summary.js';
import { renderSvg } from './svg.js';
import { timelineData } from './timeline.js';

export interface ReportOptions {
  /** Page title (default: "isocheck: FILE"). */
  title?: string;
  /** The `--iso` override the history was checked with, if any (shown with the configuration). */
  iso?: string;
}

/** Anomalies drawn as graphs (the rest are listed in words, up to MAX_LISTED). */
const MAX_DRAWN = 5;
const MAX_LISTED = 50;

/** Draws anomalies into SVGs held by the page (`svgs`, referenced by index), up to MAX_DRAWN per call. */
class Drawer {
  readonly svgs: string[] = [];
  constructor(private readonly history: History) {}

  async anomalies(anomalies: Anomaly[], prefix: string, drawn = MAX_DRAWN): Promise<PageAnomaly[]> {
    const out: PageAnomaly[] = [];
    for (const [i, a] of anomalies.slice(0, MAX_LISTED).entries())
      out.push(anomalyData(a, i < drawn ? await this.graphs(a, `${prefix}${i}`) : []));
    return out;
  }

  private async graphs(a: Anomaly, prefix: string): Promise<PageGraph[]> {
    const graphs: AnomalyGraph[] = anomalyGraphs(this.history, a, prefix);
    // A case split drawn case by case gets its overview first.
    if (a.type !== 'no-consistent-order' && 'cases' in a && graphs.length)
      graphs.unshift(caseSplitGraph(a, `${prefix}s`));
    const out: PageGraph[] = [];
    for (const g of graphs) {
      const r = await renderSvg(g.dot);
      const steps = g.steps.map((s) => ({ ...s, label: edgeLabel(s, s.step), reason: edgeReason(s) }));
      const page: PageGraph = {
        ...(g.title ? { title: g.title } : {}),
        nodes: g.nodes,
        steps,
        ...(g.cases ? { cases: g.cases } : {}),
        ...(g.compact ? { compact: true } : {}),
      };
      if ('svg' in r) {
        this.svgs.push(r.svg);
        page.svg = this.svgs.length - 1;
      } else page.error = r.error;
      out.push(page);
    }
    return out;
  }
}

export async function renderReport(
  history: History,
  result: CheckResult,
  options: ReportOptions = {},
): Promise<string> {
  const drawer = new Drawer(history);
  const data = pageData(history, result, await drawer.anomalies(result.anomalies, 'a'), options);
  return pageHtml({ title: data.title, data, svgs: drawer.svgs });
}

/**
 * The report of `check --levels --report`: the level boundary (each uniform level with its commit order or its
 * drawn anomaly, the strongest, the strongest configuration by label and why each label stops), the history's
 * timeline with the commit order of the strongest configuration, and the first inconsistent level's anomalies as
 * the page's explanation ("why not SI").
 */
export async function renderLevelsReport(
  history: History,
  boundary: LevelBoundary,
  options: ReportOptions = {},
): Promise<string> {
  const drawer = new Drawer(history);
  const whyNot = boundary.uniform.find((v) => v.verdict === 'inconsistent' && v.result);
  const strongest = boundary.uniform.find((v) => v.level === boundary.strongest);
  const check = async (v: LevelVerdict, prefix: string): Promise<PageLevelCheck> => ({
    level: v.level,
    verdict: v.verdict,
    impliedBy: v.impliedBy ?? null,
    headline: levelVerdictText(v),
    commitOrder: v.result?.commitOrder ?? null,
    anomalies: v.result && v !== whyNot ? await drawer.anomalies(v.result.anomalies, prefix, 1) : [],
  });
  const uniform: PageLevelCheck[] = [];
  for (const [i, v] of boundary.uniform.entries()) uniform.push(await check(v, `u${i}a`));
  const byLabel = boundary.byLabel;
  const blockedBy: (PageLevelCheck & { label: string })[] = [];
  for (const [i, [label, { level, result }]] of [...(byLabel?.blockedBy ?? [])].entries())
    blockedBy.push({ label, ...(await check({ level, verdict: result.verdict, result }, `b${i}a`)) });
  // The page's own explanation and commit order: why the first inconsistent level fails, and the order of the
  // strongest configuration (by label when there is one).
  const main = whyNot?.result ?? strongest?.result ?? boundary.uniform.find((v) => v.result)?.result;
  const order = byLabel?.result.commitOrder ?? strongest?.result?.commitOrder;
  const result: CheckResult = {
    verdict: boundary.strongest ? 'consistent' : (main?.verdict ?? 'unknown'),
    anomalies: whyNot?.result?.anomalies ?? [],
    ...(order ? { commitOrder: order } : {}),
    notes: main?.notes ?? [],
    stats: main?.stats ?? historyStats(history),
  };
  const levels: PageLevels = {
    checks: boundary.checks,
    uniform,
    strongest: boundary.strongest ?? null,
    strongestText: strongestText(boundary),
    whyNot: whyNot?.level ?? null,
    byLabel: byLabel
      ? {
          spec: byLabel.spec,
          levels: [...byLabel.levels].map(([label, level]) => ({ label, level })),
          commitOrder: byLabel.result.commitOrder ?? null,
          blockedBy,
        }
      : null,
  };
  const anomalies = await drawer.anomalies(result.anomalies, 'a');
  const data = { ...pageData(history, result, anomalies, options), levels };
  return pageHtml({ title: data.title, data, svgs: drawer.svgs });
}

function pageData(history: History, result: CheckResult, anomalies: PageAnomaly[], options: ReportOptions): PageData {
  const tl = timelineData(history);
  const index = new Map(history.txns.map((t, i) => [t.id, i]));
  const involved = new Set<number>();
  for (const a of result.anomalies.slice(0, MAX_DRAWN)) {
    for (const id of [...a.txns, ...anomalyEdges(a).flatMap((e) => [e.from, e.to])]) {
      const i = index.get(id);
      if (i !== undefined) involved.add(i);
    }
  }
  return {
    title: options.title ?? `isocheck: ${basename(history.file)}`,
    file: history.file,
    truncated: history.truncated,
    verdict: result.verdict,
    reason: result.reason ?? null,
    notes: result.notes,
    stats: result.stats,
    iso: options.iso ?? null,
    generated: new Date().toISOString(),
    meta: metaEntries(history.meta),
    labels: labelLevels(history),
    levelColors: LEVEL_COLORS,
    tables: Object.fromEntries([...history.tables.values()].map((t) => [t.name, t.key])),
    timeline: { mode: tl.mode, sessions: tl.sessions },
    txns: history.txns.map((t, i) => ({
      id: t.id,
      s: t.session,
      q: t.seq,
      iso: t.iso,
      st: t.status,
      lb: t.label ?? null,
      b: tl.begin[i],
      e: tl.end[i],
      ln: t.line,
      err: t.error ?? null,
      ev: t.events,
    })),
    highlight: [...involved].sort((a, b) => a - b),
    commitOrder: result.commitOrder
      ? result.commitOrder.map((id) => index.get(id)).filter((i): i is number => i !== undefined)
      : null,
    subHistory: result.subHistory ?? null,
    anomalies,
    moreAnomalies: Math.max(0, result.anomalies.length - MAX_LISTED),
    levels: null,
  };
}

/** An edge for the page: the data, its label and its reason in words (explain.ts). */
const edgeData = (e: Edge, step?: number): PageEdge => ({ ...e, label: edgeLabel(e, step), reason: edgeReason(e) });

function anomalyData(a: Anomaly, graphs: PageGraph[]): PageAnomaly {
  const search = a.type === 'no-consistent-order' ? a : undefined;
  return {
    type: a.type,
    name: anomalyName(a.type),
    literature: literatureNames(a.type),
    message: anomalyMessage(a),
    levels: a.levels ?? [],
    txns: a.txns,
    events: a.events ?? [],
    edges: 'edges' in a ? a.edges.map((e, i) => edgeData(e, i + 1)) : [],
    cases:
      'cases' in a
        ? a.cases.map((c) => ({ assume: c.assume, edges: c.edges.map((e, i) => edgeData(e, i + 1)) }))
        : null,
    transactions: a.transactions ?? null,
    subHistory: search?.subHistory ?? null,
    conflicts: search?.conflicts?.map(conflictText) ?? null,
    versions: a.type === 'missing-row' ? missingVersions(a) : null,
    text: renderAnomaly(a, ''),
    graphs,
  };
}

export async function writeReport(
  file: string,
  history: History,
  result: CheckResult,
  options: ReportOptions = {},
): Promise<void> {
  await writeFile(file, await renderReport(history, result, options), 'utf8');
}

export async function writeLevelsReport(
  file: string,
  history: History,
  boundary: LevelBoundary,
  options: ReportOptions = {},
): Promise<void> {
  await writeFile(file, await renderLevelsReport(history, boundary, options), 'utf8');
}

/**
 * Where the report of one of several checked files goes: `--report out.html` with one file is `out.html`;
 * with several, `out.<history name>.html` (e.g. `out.lost-update.SI.html`), so no report overwrites another.
 */
export function reportFileFor(report: string, historyFile: string, fileCount: number): string {
  if (fileCount <= 1) return report;
  const name = basename(historyFile)
    .replace(/\.ndjson(\.gz)?$/i, '')
    .replace(/[^\w.+-]+/g, '_');
  const dot = report.toLowerCase().endsWith('.html') ? report.length - 5 : report.length;
  return `${report.slice(0, dot)}.${name}${report.slice(dot) || '.html'}`;
}
