/**
 * Hand-written SVG line plots in the style of the paper's Figures 6 and 7: one panel per workload, one line per
 * configuration, time on a log-scale y axis, undecided runs (timeouts) marked on a dashed line at the timeout.
 */

export interface Series {
  name: string;
  color: string;
  /** Mean (or other summary) time of the decided runs at x; y in milliseconds. */
  points: { x: number; y: number }[];
  /** Runs at x that were not decided within the timeout. */
  timeouts: { x: number; count: number; of: number }[];
  dashed?: boolean;
}

export interface Panel {
  title: string;
  series: Series[];
}

export interface Plot {
  title: string;
  xLabel: string;
  yLabel: string;
  panels: Panel[];
  timeoutMs: number;
  note?: string;
}

export const PALETTE = ['#1f77b4', '#ff7f0e', '#2ca02c', '#d62728', '#9467bd', '#8c564b', '#e377c2'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const fmt = (v: number) => (Number.isInteger(v) ? String(v) : v.toFixed(2).replace(/\.?0+$/, ''));

function timeLabel(ms: number): string {
  if (ms >= 1000) return `${fmt(ms / 1000)} s`;
  if (ms >= 1) return `${fmt(ms)} ms`;
  return `${fmt(ms * 1000)} µs`;
}

export function renderPlot(p: Plot): string {
  const W = 330,
    H = 260,
    ml = 62,
    mr = 14,
    mt = 30,
    mb = 44;
  const legendH = 26;
  const top = 34;
  const width = Math.max(Math.max(1, p.panels.length) * W, 760);
  const height = top + H + legendH + (p.note ? 18 : 0);
  const all = p.panels.flatMap((pa) => pa.series.flatMap((s) => s.points.map((q) => q.y))).filter((y) => y > 0);
  const xs = [
    ...new Set(
      p.panels.flatMap((pa) => pa.series.flatMap((s) => [...s.points.map((q) => q.x), ...s.timeouts.map((t) => t.x)])),
    ),
  ].sort((a, b) => a - b);
  const anyTimeout = p.panels.some((pa) => pa.series.some((s) => s.timeouts.length > 0));
  const yMax = Math.max(p.timeoutMs, ...all, 1);
  const yMin = Math.min(...all, yMax / 10);
  let lo = Math.floor(Math.log10(Math.max(yMin, 1e-3)));
  const hi = Math.ceil(Math.log10(yMax));
  if (hi - lo < 2) lo = hi - 2;
  const xMin = xs.length ? xs[0] : 0;
  const xMax = xs.length ? xs[xs.length - 1] : 1;
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 ` +
      `0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="11">`,
  );
  out.push(`<rect x="0" y="0" width="${width}" height="${height}" fill="white"/>`);
  out.push(
    `<text x="${width / 2}" y="18" text-anchor="middle" font-size="13" font-weight="bold">${esc(p.title)}</text>`,
  );
  p.panels.forEach((panel, i) => {
    const ox = i * W;
    const px = (x: number) =>
      ox + ml + (xMax === xMin ? (W - ml - mr) / 2 : ((x - xMin) / (xMax - xMin)) * (W - ml - mr));
    const py = (y: number) => top + mt + (1 - (Math.log10(Math.max(y, 10 ** lo)) - lo) / (hi - lo)) * (H - mt - mb);
    const x0 = ox + ml,
      x1 = ox + W - mr,
      y0 = top + mt,
      y1 = top + H - mb;
    out.push(`<g>`);
    out.push(
      `<text x="${(x0 + x1) / 2}" y="${top + 16}" text-anchor="middle" font-size="12" ` +
        `font-weight="bold">${esc(panel.title)}</text>`,
    );
    out.push(`<rect x="${x0}" y="${y0}" width="${x1 - x0}" height="${y1 - y0}" fill="none" stroke="#333"/>`);
    for (let d = lo; d <= hi; d++) {
      const y = py(10 ** d);
      out.push(`<line x1="${x0}" y1="${y}" x2="${x1}" y2="${y}" stroke="#ddd"/>`);
      out.push(`<text x="${x0 - 4}" y="${y + 3}" text-anchor="end">${esc(timeLabel(10 ** d))}</text>`);
    }
    for (const x of xs) {
      out.push(`<line x1="${px(x)}" y1="${y1}" x2="${px(x)}" y2="${y1 + 4}" stroke="#333"/>`);
      out.push(`<text x="${px(x)}" y="${y1 + 15}" text-anchor="middle">${x}</text>`);
    }
    out.push(`<text x="${(x0 + x1) / 2}" y="${y1 + 32}" text-anchor="middle">${esc(p.xLabel)}</text>`);
    out.push(
      `<text x="${ox + 14}" y="${(y0 + y1) / 2}" text-anchor="middle" ` +
        `transform="rotate(-90 ${ox + 14} ${(y0 + y1) / 2})">${esc(p.yLabel)}</text>`,
    );
    if (anyTimeout || all.length === 0) {
      const yt = py(p.timeoutMs);
      out.push(`<line x1="${x0}" y1="${yt}" x2="${x1}" y2="${yt}" stroke="#c00" stroke-dasharray="4 3"/>`);
      out.push(
        `<text x="${x1 - 3}" y="${yt - 3}" text-anchor="end" fill="#c00">timeout ${esc(timeLabel(p.timeoutMs))}</text>`,
      );
    }
    panel.series.forEach((s, si) => {
      const pts = s.points.slice().sort((a, b) => a.x - b.x);
      if (pts.length > 1)
        out.push(
          `<polyline fill="none" stroke="${s.color}" ` +
            `stroke-width="1.6"${s.dashed ? ' stroke-dasharray="5 3"' : ''} ` +
            `points="${pts.map((q) => `${px(q.x).toFixed(1)},${py(q.y).toFixed(1)}`).join(' ')}"/>`,
        );
      for (const q of pts)
        out.push(
          `<circle cx="${px(q.x).toFixed(1)}" cy="${py(q.y).toFixed(1)}" r="2.6" ` +
            `fill="${s.color}"><title>${esc(`${s.name}, ${q.x}: ${timeLabel(q.y)}`)}</title></circle>`,
        );
      for (const t of s.timeouts) {
        const cx = Math.min(x1 - 4, Math.max(x0 + 4, px(t.x) + (si - (panel.series.length - 1) / 2) * 4));
        const cy = py(p.timeoutMs);
        out.push(
          `<path d="M${cx - 3.5},${cy - 3.5}L${cx + 3.5},${cy + 3.5}` +
            `M${cx - 3.5},${cy + 3.5}L${cx + 3.5},${cy - 3.5}" stroke="${s.color}" stroke-width="2">` +
            `<title>${esc(`${s.name}, ${t.x}: ${t.count}/${t.of} not decided within the timeout`)}</title></path>`,
        );
      }
    });
    out.push(`</g>`);
  });
  // Legend (the series of the first panel; all panels use the same names and colours).
  const names = new Map<string, Series>();
  for (const pa of p.panels) for (const s of pa.series) if (!names.has(s.name)) names.set(s.name, s);
  let lx = 16;
  const ly = top + H + 12;
  for (const s of names.values()) {
    out.push(
      `<line x1="${lx}" y1="${ly}" x2="${lx + 18}" y2="${ly}" stroke="${s.color}" ` +
        `stroke-width="2"${s.dashed ? ' stroke-dasharray="5 3"' : ''}/>`,
    );
    out.push(`<text x="${lx + 22}" y="${ly + 4}">${esc(s.name)}</text>`);
    lx += 30 + s.name.length * 7;
  }
  if (anyTimeout) {
    out.push(
      `<path d="M${lx + 5},${ly - 3.5}L${lx + 12},${ly + 3.5}M${lx + 5},${ly + 3.5}L${lx + 12},${ly - 3.5}" ` +
        `stroke="#333" stroke-width="2"/>`,
    );
    out.push(`<text x="${lx + 18}" y="${ly + 4}">not decided within the timeout (hover for counts)</text>`);
  }
  if (p.note) out.push(`<text x="16" y="${height - 6}" fill="#555">${esc(p.note)}</text>`);
  out.push(`</svg>`);
  return `${out.join('\n')}\n`;
}
