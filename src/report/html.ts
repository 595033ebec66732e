/**
 * `isocheck check FILE --report out.html`: one self-contained HTML file (inline CSS and JS, no network) with
 * the verdict and configuration, each anomaly's explanation as a graph (Graphviz -> SVG at report time) with
 * the same explanation in words beside it, and a timeline of the whole history (canvas; click a transaction
 * for its statements; the witness commit order for a consistent history).
 *
 *   History + CheckResult -> page data (JSON, escaped for <script>) + SVGs (graph.ts -> svg.ts) -> page.ts
 *
 * The page script builds every text node from the JSON with textContent; the SVGs are checked by svg.ts.
 */
import { writeFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { anomalyEdges, type Anomaly, type Edge } from '../checker/anomaly.js';
import type { CheckResult } from '../checker/check.js';
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
import { anomalyGraphs, edgeLabel, LEVEL_COLORS, type GraphStep } from './graph.js';
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

interface PageGraph {
  title?: string;
  /** Index of the SVG template in the page, or the reason there is no drawing. */
  svg?: number;
  error?: string;
  nodes: Record<string, string>;
  steps: (GraphStep & { label: string[]; reason: string })[];
}

export async function renderReport(
  history: History,
  result: CheckResult,
  options: ReportOptions = {},
): Promise<string> {
  const svgs: string[] = [];
  const anomalies = [];
  for (const [i, a] of result.anomalies.slice(0, MAX_LISTED).entries()) {
    const graphs: PageGraph[] = [];
    if (i < MAX_DRAWN) {
      for (const g of anomalyGraphs(history, a, `a${i}`)) {
        const r = await renderSvg(g.dot);
        const steps = g.steps.map((s) => ({ ...s, label: edgeLabel(s, s.step), reason: edgeReason(s) }));
        if ('svg' in r) {
          svgs.push(r.svg);
          graphs.push({ title: g.title, svg: svgs.length - 1, nodes: g.nodes, steps });
        } else graphs.push({ title: g.title, error: r.error, nodes: g.nodes, steps });
      }
    }
    anomalies.push(anomalyData(a, graphs));
  }

  const tl = timelineData(history);
  const index = new Map(history.txns.map((t, i) => [t.id, i]));
  const involved = new Set<number>();
  for (const a of result.anomalies.slice(0, MAX_DRAWN)) {
    for (const id of [...a.txns, ...anomalyEdges(a).flatMap((e) => [e.from, e.to])]) {
      const i = index.get(id);
      if (i !== undefined) involved.add(i);
    }
  }
  const data = {
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
  };
  return pageHtml({ title: data.title, data, svgs });
}

/** An edge for the page: the data, its label and its reason in words (explain.ts). */
const edgeData = (e: Edge, step?: number) => ({ ...e, label: edgeLabel(e, step), reason: edgeReason(e) });

function anomalyData(a: Anomaly, graphs: PageGraph[]) {
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
