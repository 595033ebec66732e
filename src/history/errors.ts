// Error classes for the evaluation of recorded reads' "where" clauses (history-format.md
// "where" semantics).

/** A "where" clause (or a value it is evaluated on) that cannot be evaluated faithfully:
 *  unsupported construct, unknown column, bad parameter, a value PostgreSQL would reject at
 *  planning time, or an input format this evaluator does not implement. */
export class PredicateError extends Error {
  override name = 'PredicateError';
}

/** A run-time error PostgreSQL would raise while evaluating the clause on a row (division by
 *  zero, integer out of range, invalid input syntax of a cast...). test() maps it to "not
 *  satisfied": a read whose evaluation raised could not have succeeded. */
export class EvalError extends Error {
  override name = 'EvalError';
}
