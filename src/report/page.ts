/**
 * The report page: an HTML skeleton with inline CSS (page-style.ts) and one inline script (page-script.ts),
 * the page data as JSON in `<script type="application/json">`, and the Graphviz SVGs in `<template>`s.
 * A Content-Security-Policy allows only that one script (by hash) and no network at all, so even a value
 * that slipped past escaping could neither run nor load anything.
 */
import { createHash } from 'node:crypto';
import { escapeHtml, jsonForScript } from './escape.js';
import { PAGE_SCRIPT } from './page-script.js';
import { PAGE_STYLE } from './page-style.js';

export interface PageParts {
  title: string;
  data: unknown;
  /** Sanitised SVG documents (svg.ts), referenced from the data by index. */
  svgs: string[];
}

export function pageHtml(parts: PageParts): string {
  if (/<\/script/i.test(PAGE_SCRIPT) || /<\/style/i.test(PAGE_STYLE))
    throw new Error('report page script/style must not contain a closing tag');
  const scriptHash = createHash('sha256').update(PAGE_SCRIPT, 'utf8').digest('base64');
  const csp = [
    "default-src 'none'",
    `script-src 'sha256-${scriptHash}'`,
    "style-src 'unsafe-inline'",
    "img-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
  return [
    '<!DOCTYPE html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="${csp}">`,
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="generator" content="isocheck">',
    `<title>${escapeHtml(parts.title)}</title>`,
    `<style>${PAGE_STYLE}</style>`,
    '</head>',
    '<body>',
    '<noscript><p>This report draws its content with JavaScript; please enable it for this file.</p></noscript>',
    '<div id="app"></div>',
    `<script type="application/json" id="isocheck-data">${jsonForScript(parts.data)}</script>`,
    ...parts.svgs.map((svg, i) => `<template id="svg-${i}">${svg}</template>`),
    `<script>${PAGE_SCRIPT}</script>`,
    '</body>',
    '</html>',
    '',
  ].join('\n');
}
