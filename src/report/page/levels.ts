/**
 * The level boundary (part of the page script, see context.ts; `check --levels --report`): one row per level
 * with its mark and the line `check --levels` prints, each with its evidence (the witness commit order, or the
 * anomaly drawn as in the page's explanations), the strongest level, and the strongest configuration by label
 * with, for each label below SER, why it cannot be raised.
 */
import type { PageLevelCheck, PageLevels } from '../page-data.js';
import type { Explanations, PageContext } from './context.js';

export function renderLevels(ctx: PageContext, app: HTMLElement, levels: PageLevels, explain: Explanations): void {
  // (inside the function: page-script.ts inlines the function's text alone)
  const MARK = { consistent: '\u2713', inconsistent: '\u2717', unknown: '?' } as const;
  const ORDER_SHOWN = 300;
  const { dom } = ctx;
  const { add, text } = dom;
  const section = add(app, 'section', 'levels-boundary');
  section.id = 'levels';
  add(section, 'h2', null, 'Level boundary');
  add(
    section,
    'p',
    'hint',
    `Every transaction judged at one level, weakest first (${dom.plural(levels.checks, 'check')}). A history ` +
      'consistent at a level is consistent at every weaker one, and one inconsistent at a level is inconsistent ' +
      'at every stronger one: those verdicts are implied.',
  );
  const strip = add(section, 'p', 'level-strip');
  for (const v of levels.uniform) {
    const c = add(strip, 'span', `level-mark ${v.verdict}`, `${v.level} ${MARK[v.verdict]}`);
    c.title = v.headline;
  }
  const table = add(section, 'table', 'levels boundary');
  const head = add(add(table, 'thead'), 'tr');
  for (const h of ['level', '', 'verdict']) add(head, 'th', null, h);
  const body = add(table, 'tbody');
  for (const v of levels.uniform) {
    const tr = add(body, 'tr', `level-row ${v.verdict}`);
    tr.dataset.level = v.level;
    add(tr, 'td').appendChild(dom.chip(v.level));
    add(tr, 'td', `mark ${v.verdict}`, MARK[v.verdict]);
    const td = add(tr, 'td', 'verdict-text', v.headline);
    if (v.level === levels.whyNot) {
      text(td, ' ');
      const b = add(td, 'button', 'link', '(explained below)');
      b.type = 'button';
      b.addEventListener('click', () => document.getElementById('why-not')?.scrollIntoView({ behavior: 'smooth' }));
    }
    evidence(td, v, `level-${v.level}`);
  }
  add(section, 'p', 'strongest', `Strongest level: ${levels.strongestText}`);

  const byLabel = levels.byLabel;
  if (byLabel) {
    add(section, 'h3', null, 'Strongest configuration by label');
    add(
      section,
      'p',
      'hint',
      'Starting from every label at the strongest level, each label raised one level at a time while the history ' +
        'stays consistent (as --iso takes it). No label can be raised further; raising one first may block another.',
    );
    add(section, 'pre', 'spec', byLabel.spec);
    const lt = add(section, 'table', 'levels by-label');
    const lh = add(add(lt, 'thead'), 'tr');
    for (const h of ['label', 'level', 'one level higher']) add(lh, 'th', null, h);
    const lb = add(lt, 'tbody');
    for (const { label, level } of byLabel.levels) {
      const tr = add(lb, 'tr');
      tr.dataset.label = label;
      add(tr, 'td', 'mono', label);
      add(tr, 'td').appendChild(dom.chip(level));
      const blocked = byLabel.blockedBy.find((b) => b.label === label);
      const td = add(tr, 'td', 'verdict-text');
      if (!blocked) add(td, 'span', 'muted', level === 'SER' ? '(the strongest level)' : '');
      else {
        td.appendChild(dom.chip(blocked.level));
        text(td, ` ${MARK[blocked.verdict]} ${blocked.headline}`);
        evidence(td, blocked, `label-${label}`);
      }
    }
    if (byLabel.commitOrder) orderDetails(section, byLabel.commitOrder, 'Witness commit order of this configuration');
  }

  /** A check's evidence under its line, folded: its commit order, or its first anomaly drawn. */
  function evidence(parent: HTMLElement, v: PageLevelCheck, id: string): void {
    if (v.commitOrder) orderDetails(parent, v.commitOrder, 'witness commit order');
    if (v.anomalies.length) {
      const det = add(parent, 'details', 'level-evidence');
      add(det, 'summary', null, v.anomalies.length === 1 ? 'explanation' : `${v.anomalies.length} anomalies`);
      v.anomalies.forEach((a, k) => {
        explain.anomaly(det, a, `${id}-anomaly-${k}`);
      });
      det.addEventListener('toggle', () => explain.fit());
    }
  }
  function orderDetails(parent: HTMLElement, order: string[], title: string): void {
    const det = add(parent, 'details', 'level-order');
    add(det, 'summary', null, `${title} (${dom.plural(order.length, 'transaction')})`);
    const shown = order.slice(0, ORDER_SHOWN).join(', ');
    add(det, 'pre', null, shown + (order.length > ORDER_SHOWN ? `, \u2026 (${order.length - ORDER_SHOWN} more)` : ''));
  }
}
