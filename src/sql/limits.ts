// The limits on hostile input that compilePredicate enforces (predicate.ts's header says why they exist).

/** Limits on what compilePredicate accepts (see the header). */
export const PREDICATE_LIMITS = Object.freeze({
  /** characters of WHERE text */
  maxLength: 1_000_000,
  /** parse-tree nodes (a comparison "col = 1" is 4: the operator, the column, its name, the constant) */
  maxNodes: 200_000,
  /** nesting of parse-tree nodes */
  maxDepth: 1_000,
  /** nesting of arrays/objects in a parameter value */
  maxParamDepth: 64,
  /** characters of a string computed by || (PostgreSQL's limit, 1 GB, is beyond what JavaScript strings hold) */
  maxStringLength: 1 << 28,
});
