/** The page's header (part of the page script, see context.ts): title, verdict, summary, configuration. */
import type { PageContext } from './context.js';

export function renderHeader(ctx: PageContext, app: HTMLElement): void {
  const { data: D, dom } = ctx;
  const { add, plural } = dom;
  const top = add(app, 'header', 'top');
  const titles = add(top, 'div', 'titles');
  add(titles, 'h1', null, D.title);
  add(titles, 'div', 'file', D.file + (D.truncated ? '  (truncated: no end line)' : ''));
  if (D.levels) {
    // --levels: no one verdict; the strongest level every transaction can be judged at
    const { strongest, uniform } = D.levels;
    const rc = uniform[0]?.verdict ?? 'unknown';
    const badge = strongest ?? (rc === 'inconsistent' ? 'NONE' : 'UNKNOWN');
    add(top, 'div', `verdict ${strongest ? 'consistent' : rc}`, `STRONGEST: ${badge}`);
  } else add(top, 'div', `verdict ${D.verdict}`, String(D.verdict).toUpperCase());
  const s = D.stats;
  const anomalies = D.anomalies.length + D.moreAnomalies;
  const summary = [
    `${s.committed} committed, ${s.aborted} aborted, ${s.unknown} unknown of ${plural(s.transactions, 'transaction')}`,
    ` in ${plural(s.sessions, 'session')}; ${plural(s.events, 'statement')}, ${plural(s.conflicts, 'conflict')}`,
    D.levels
      ? `; ${plural(D.levels.checks, 'check')} for the level boundary`
      : `; checked in ${(s.timeMs / 1000).toFixed(2)} s`,
    anomalies && !D.levels ? `; ${anomalies} ${anomalies === 1 ? 'anomaly' : 'anomalies'}` : '',
  ];
  add(app, 'p', 'summary', summary.join(''));
  if (D.reason) add(app, 'p', 'reason', D.reason);
  for (const n of D.notes) add(app, 'p', 'note', `note: ${n}`);

  add(app, 'h2', null, 'Configuration');
  const grid = add(app, 'div', 'grid');
  const levelsBox = add(grid, 'div');
  add(levelsBox, 'h4', null, 'Isolation levels by transaction label');
  if (D.iso) add(levelsBox, 'p', 'note', `checked with --iso ${D.iso} (the levels below are the recorded ones)`);
  const lt = add(levelsBox, 'table', 'levels');
  const lh = add(add(lt, 'thead'), 'tr');
  for (const h of ['label', 'levels', 'committed', 'aborted', 'unknown']) add(lh, 'th', null, h);
  const lb = add(lt, 'tbody');
  for (const l of D.labels) {
    const tr = add(lb, 'tr');
    add(tr, 'td', null, l.label);
    const td = add(tr, 'td');
    for (const [lv, n] of Object.entries(l.levels)) td.appendChild(dom.chip(lv, `${lv} \u00d7${n}`));
    add(tr, 'td', 'n', l.statuses.committed);
    add(tr, 'td', 'n', l.statuses.aborted);
    add(tr, 'td', 'n', l.statuses.unknown);
  }
  const metaBox = add(grid, 'div');
  add(metaBox, 'h4', null, 'Recording');
  const mt = add(metaBox, 'table', 'kv');
  if (D.meta.length === 0) add(add(mt, 'tr'), 'td', 'muted', '(no metadata in the history header)');
  for (const m of D.meta) {
    const tr = add(mt, 'tr');
    add(tr, 'th', null, m.key);
    add(tr, 'td', 'v', m.value);
  }
  const statBox = add(grid, 'div');
  add(statBox, 'h4', null, D.levels ? `Check${D.levels.whyNot ? ` at ${D.levels.whyNot}` : ''}` : 'Check');
  const st = add(statBox, 'table', 'kv');
  const rows: [string, unknown][] = [
    ['transactions', s.transactions],
    ['sessions', s.sessions],
    ['statements', s.events],
    ['reads', s.reads],
    ['keys', s.keys],
    ['conflicts', s.conflicts],
    ['forced witnesses', s.forcedWitnesses],
    ['saturation edges', s.saturationEdges],
    ['prefixes explored', s.prefixes],
    ['time', `${(s.timeMs / 1000).toFixed(2)} s`],
  ];
  for (const [k, v] of rows) {
    const tr = add(st, 'tr');
    add(tr, 'th', null, k);
    add(tr, 'td', 'v', v);
  }
}
