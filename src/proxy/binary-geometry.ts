/**
 * Geometric types in binary format (PostgreSQL's point_send, box_send, lseg_send, line_send, circle_send, path_send,
 * poly_send; utils/adt/geo_ops.c), for the proxy's conversion of results and parameters (formats.ts): float8s in
 * order
 *
 *   point (x, y)   box (high x, high y, low x, low y)   lseg (x1, y1, x2, y2)   line (A, B, C)   circle (x, y, r)
 *
 * and their text as the server prints it: `(1.5,2)`, `(3,4),(1,2)`, `[(1,2),(3,4)]`, `{1,2,3}`, `<(1,2),3>`; and the
 * two of any number of points:
 *
 *   path: byte closed (1) or open (0), int32 npts, then each point (x, y)   text `((1,2),(3,4))` closed,
 *         `[(1,2),(3,4)]` open
 *   polygon: int32 npts, then each point (x, y)                            text `((1,2),(3,4))`
 */

const NUMBER = String.raw`(-?(?:\d+(?:\.\d*)?(?:e[+-]?\d+)?|Infinity|NaN))`;
const POINT = String.raw`\(${NUMBER},${NUMBER}\)`;
const SHAPES: Record<string, RegExp> = {
  point: new RegExp(`^${POINT}$`, 'i'),
  box: new RegExp(`^${POINT},${POINT}$`, 'i'),
  lseg: new RegExp(String.raw`^\[${POINT},${POINT}\]$`, 'i'),
  line: new RegExp(String.raw`^\{${NUMBER},${NUMBER},${NUMBER}\}$`, 'i'),
  circle: new RegExp(`^<${POINT},${NUMBER}>$`, 'i'),
};
const POINTS = new RegExp(`^(?:${POINT},)*${POINT}$`, 'i');
const EACH_POINT = new RegExp(POINT, 'gi');
const SIZES: Record<string, number> = { point: 2, box: 4, lseg: 4, line: 3, circle: 3 };

export type Shape = keyof typeof SIZES;

/** A shape's text in binary (undefined: not such a text). */
export function shapeToBinary(text: string, shape: Shape): Buffer | undefined {
  const m = SHAPES[shape].exec(text);
  if (!m) return undefined;
  const n = SIZES[shape];
  const b = Buffer.alloc(8 * n);
  for (let i = 0; i < n; i++) b.writeDoubleBE(Number(m[i + 1]), 8 * i);
  return b;
}

/** A binary shape as text the server reads (each float exactly, -0 included). */
export function shapeFromBinary(b: Buffer, shape: Shape, floatText: (v: number) => string): string {
  const v = Array.from({ length: SIZES[shape] }, (_, i) => floatText(b.readDoubleBE(8 * i)));
  switch (shape) {
    case 'point':
      return `(${v[0]},${v[1]})`;
    case 'box':
      return `(${v[0]},${v[1]}),(${v[2]},${v[3]})`;
    case 'lseg':
      return `[(${v[0]},${v[1]}),(${v[2]},${v[3]})]`;
    case 'line':
      return `{${v[0]},${v[1]},${v[2]}}`;
    default:
      return `<(${v[0]},${v[1]}),${v[2]}>`;
  }
}

/** A path's or polygon's text in binary (undefined: not such a text). */
export function pointsToBinary(text: string, kind: 'path' | 'polygon'): Buffer | undefined {
  const open = text[0];
  const close = text[text.length - 1];
  const closed = open === '(' && close === ')';
  if (!closed && !(kind === 'path' && open === '[' && close === ']')) return undefined;
  const inner = text.slice(1, -1);
  if (!POINTS.test(inner)) return undefined;
  const points = [...inner.matchAll(EACH_POINT)];
  const head = kind === 'path' ? 5 : 4;
  const b = Buffer.alloc(head + 16 * points.length);
  if (kind === 'path') b[0] = closed ? 1 : 0;
  b.writeInt32BE(points.length, head - 4);
  points.forEach((m, i) => {
    b.writeDoubleBE(Number(m[1]), head + 16 * i);
    b.writeDoubleBE(Number(m[2]), head + 16 * i + 8);
  });
  return b;
}

/** A binary path or polygon as text the server reads. */
export function pointsFromBinary(b: Buffer, kind: 'path' | 'polygon', floatText: (v: number) => string): string {
  const head = kind === 'path' ? 5 : 4;
  const n = b.readInt32BE(head - 4);
  const points: string[] = [];
  for (let i = 0; i < n; i++)
    points.push(`(${floatText(b.readDoubleBE(head + 16 * i))},${floatText(b.readDoubleBE(head + 16 * i + 8))})`);
  const open = kind === 'path' && b[0] === 0;
  return open ? `[${points.join(',')}]` : `(${points.join(',')})`;
}
