/**
 * The report page's script, as the text page.ts inlines. Its source is the typed browser module page/*.ts (its
 * data type shared with html.ts: page-data.ts), checked by `tsc` (also alone, with the DOM library and no Node
 * types: page/tsconfig.json). Each part is one function that takes what it needs as arguments and imports nothing
 * at run time, so its compiled text (Function.prototype.toString, whatever compiled it: tsc for dist/, Vite in
 * the tests) stands on its own: the script is `runPage` called with the other parts. No build step and no asset:
 * the page stays one self-contained file.
 */
import type { PageParts } from './page/parts.js';
import { createDetails } from './page/details.js';
import { createDom } from './page/dom.js';
import { createExplanations } from './page/explanations.js';
import { renderHeader } from './page/header.js';
import { renderLevels } from './page/levels.js';
import { runPage } from './page/main.js';
import { createTimeline } from './page/timeline.js';

const PARTS: PageParts = {
  createDom,
  renderHeader,
  createExplanations,
  renderLevels,
  createTimeline,
  createDetails,
};

export const PAGE_SCRIPT = [
  '(function () {',
  "'use strict';",
  `(${runPage.toString()})({`,
  ...Object.entries(PARTS).map(([name, part]: [string, () => unknown]) => `${name}: ${part.toString()},`),
  '});',
  '})();',
  '',
].join('\n');
