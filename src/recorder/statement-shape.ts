/**
 * A WHERE's shape: its text with the literals taken out (PostgreSQL's query fingerprint, through libpg-query), so
 * that a warning about a statement is given once per shape, not once per text. ORMs that inline literals
 * (Sequelize) send a new text for every value; all of them are one shape. libpg-query is loaded by the time a
 * statement is planned (rewrite.ts); a WHERE that does not parse alone is its own shape.
 */
import { fingerprintSync } from 'libpg-query';

/** Shapes by WHERE text: a partial read asks on every run of its statement, and most texts repeat. */
const shapes = new Map<string, string>();
const MAX_SHAPES = 1000;

export function whereShape(where: string): string {
  let shape = shapes.get(where);
  if (shape === undefined) {
    try {
      shape = fingerprintSync(`SELECT WHERE ${where}`);
    } catch {
      shape = where;
    }
    if (shapes.size >= MAX_SHAPES) shapes.clear();
    shapes.set(where, shape);
  }
  return shape;
}
