/** Binary search in a sorted typed array, for the linear check's indexes (no allocation, no closure). */

/** The first index of sorted `values` whose value is not less than `x` (values.length when there is none). */
export function lowerBound(values: Float64Array, x: number): number {
  let lo = 0,
    hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The first index of sorted `values` whose value is greater than `x` (values.length when there is none). */
export function upperBound(values: Float64Array, x: number): number {
  let lo = 0,
    hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Whether sorted `keys` holds `x`. */
export function holds(keys: Int32Array, x: number): boolean {
  let lo = 0,
    hi = keys.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (keys[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo < keys.length && keys[lo] === x;
}
