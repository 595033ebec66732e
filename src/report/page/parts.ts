/**
 * The page's parts, each a function that stands alone (page-script.ts puts their compiled text into the page).
 * Here rather than in context.ts: the parts import their types from context.ts, and context.ts imports none of
 * them (no import cycle, even of types).
 */
import type { createDetails } from './details.js';
import type { createDom } from './dom.js';
import type { createExplanations } from './explanations.js';
import type { renderHeader } from './header.js';
import type { renderLevels } from './levels.js';
import type { createTimeline } from './timeline.js';

/** The parts, as page-script.ts hands them to `runPage` (main.ts). */
export interface PageParts {
  createDom: typeof createDom;
  renderHeader: typeof renderHeader;
  createExplanations: typeof createExplanations;
  renderLevels: typeof renderLevels;
  createTimeline: typeof createTimeline;
  createDetails: typeof createDetails;
}
