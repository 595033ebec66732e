/**
 * The report page's script, its entry (page-script.ts inlines it with its parts, context.ts): reads the page data
 * from `<script type="application/json" id="isocheck-data">` and builds the page with textContent only (nothing
 * from the history is ever parsed as HTML): header and configuration, the level boundary (--levels),
 * explanations, the witness commit order, the timeline and the details panel. `window.__isocheck` exposes the
 * layout for tests.
 */
import type { PageData } from '../page-data.js';
import type { PageContext, SelectOptions } from './context.js';
import type { PageParts } from './parts.js';

export function runPage(parts: PageParts): void {
  const started = performance.now();
  const D = JSON.parse(document.getElementById('isocheck-data')?.textContent ?? 'null') as PageData;
  const T = D.txns;
  const idIndex = new Map<string, number>();
  for (const [i, t] of T.entries()) idIndex.set(t.id, i);
  const orderRank = D.commitOrder ? new Map(D.commitOrder.map((i, k) => [i, k + 1])) : null;
  const app = document.getElementById('app');
  if (!app) return;

  // select() needs the timeline and the details panel, which need the context: bound once they exist
  let select = (_i: number, _opts?: SelectOptions): void => {};
  const ctx: PageContext = {
    data: D,
    txns: T,
    idIndex,
    highlighted: new Set(D.highlight),
    orderRank,
    dom: parts.createDom(D, idIndex, (i, opts) => select(i, opts)),
    select: (i, opts) => select(i, opts),
  };
  const { add } = ctx.dom;
  parts.renderHeader(ctx, app);
  const explain = parts.createExplanations(ctx);
  if (D.levels) parts.renderLevels(ctx, app, D.levels, explain);

  const total = D.anomalies.length + D.moreAnomalies;
  if (D.anomalies.length) {
    const whyNot = D.levels?.whyNot;
    const heading = whyNot ? `Why not ${whyNot}` : total === 1 ? 'Explanation' : `Explanations (${total} anomalies)`;
    add(app, 'h2', null, heading).id = whyNot ? 'why-not' : 'explanations';
    D.anomalies.forEach((a, ai) => {
      explain.anomaly(app, a, `anomaly-${ai}`);
    });
    if (D.moreAnomalies)
      add(app, 'p', 'note', `\u2026 and ${D.moreAnomalies} more anomalies (use isocheck check --json to see all).`);
  }
  if (D.commitOrder) {
    const order = D.commitOrder;
    add(app, 'h2', null, 'Witness commit order');
    const of = D.levels
      ? `the strongest configuration${D.levels.byLabel ? ` (${D.levels.byLabel.spec})` : ` (${D.levels.strongest})`}`
      : "every transaction's level";
    add(
      app,
      'p',
      null,
      `A commit order of the ${order.length} committed transactions that satisfies ${of}` +
        ' (numbered markers and the dark line on the timeline): ',
    );
    const shown = order
      .slice(0, 300)
      .map((i) => T[i].id)
      .join(', ');
    add(app, 'pre', null, shown + (order.length > 300 ? `, \u2026 (${order.length - 300} more)` : ''));
  }

  const timeline = parts.createTimeline(ctx, app);
  const details = parts.createDetails(ctx, timeline.panel);
  select = (i, opts) => {
    timeline.selected = i;
    if (opts?.reveal) timeline.reveal(i);
    else timeline.draw();
    details.show(i);
    if (opts?.scroll) timeline.element.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
  };

  explain.fit();
  window.addEventListener('resize', () => explain.fit());
  timeline.resize();
  timeline.fit();
  const loadMs = performance.now() - started;

  const indices = (ids: string[]) => ids.map((id) => idIndex.get(id)).filter((i): i is number => i !== undefined);
  const api = {
    ready: true,
    loadMs,
    transactions: T.length,
    barOf: (id: string) => {
      const i = idIndex.get(id);
      return i === undefined ? null : timeline.barOf(i);
    },
    select: (id: string) => {
      const i = idIndex.get(id);
      if (i !== undefined) select(i, { reveal: true });
    },
    selected: () => (timeline.selected >= 0 ? T[timeline.selected].id : null),
    zoomTo: (ids: string[]) => timeline.zoomTo(indices(ids)),
    fit: () => timeline.fit(),
    view: () => timeline.view(),
    highlighted: () => D.highlight.map((i) => T[i].id),
    svgEdges: () => explain.linkedEdges(),
  };
  (window as unknown as { __isocheck: typeof api }).__isocheck = api;
}
