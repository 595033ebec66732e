/**
 * DOT -> inline SVG with Graphviz compiled to WebAssembly (@viz-js/viz), at report time, so the page needs
 * no layout code. The SVG is checked before it goes into the page: only the elements and attributes
 * Graphviz draws with, no event handlers, no links, no comments or doctype (labels are already escaped by
 * graph.ts and again by Graphviz; this is the second lock on the door).
 */
import type { Viz } from '@viz-js/viz';

let vizInstance: Promise<Viz> | undefined;

async function viz(): Promise<Viz> {
  vizInstance ??= import('@viz-js/viz').then((m) => m.instance());
  return vizInstance;
}

export type SvgResult = { svg: string } | { error: string };

export async function renderSvg(dot: string): Promise<SvgResult> {
  const v = await viz();
  const r = v.render(dot, { format: 'svg', engine: 'dot' });
  if (r.status !== 'success' || typeof r.output !== 'string') {
    return {
      error:
        r.errors
          .filter((e) => e.level === 'error')
          .map((e) => e.message)
          .join('; ') || 'Graphviz failed',
    };
  }
  try {
    return { svg: sanitizeSvg(r.output) };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

const ELEMENTS = new Set([
  'svg',
  'g',
  'title',
  'polygon',
  'polyline',
  'path',
  'ellipse',
  'text',
  'tspan',
  'defs',
  'linearGradient',
  'radialGradient',
  'stop',
]);
const ATTRIBUTE = /^[a-zA-Z][\w:.-]*$/;

/**
 * Graphviz's SVG without the XML prolog, doctype and comments, verified element by element; throws on
 * anything it does not expect.
 */
export function sanitizeSvg(svg: string): string {
  const body = svg
    .replace(/<\?xml[^>]*\?>/g, '')
    .replace(/<!DOCTYPE[^>]*>/g, '')
    .replace(/<!--[\s\S]*?-->/g, '')
    .trim();
  const tag = /<(\/?)([^\s/>]+)([^>]*)>/g;
  for (let m = tag.exec(body); m; m = tag.exec(body)) {
    const [, closing, name, rest] = m;
    if (!ELEMENTS.has(name)) throw new Error(`unexpected element <${name}> in the Graphviz output`);
    if (closing) continue;
    const attrs = rest.replace(/\/\s*$/, '');
    if (!/^(\s+[^\s=]+="[^"<>]*")*\s*$/.test(attrs))
      throw new Error(`unexpected attributes in <${name}> of the Graphviz output`);
    for (const a of attrs.matchAll(/\s([^\s=]+)="/g)) {
      const attr = a[1];
      if (!ATTRIBUTE.test(attr) || /^on/i.test(attr) || /href$/i.test(attr) || attr === 'style')
        throw new Error(`unexpected attribute ${attr} in <${name}> of the Graphviz output`);
    }
  }
  if (/<!|<\?|]]>/.test(body)) throw new Error('unexpected markup in the Graphviz output');
  return body;
}
