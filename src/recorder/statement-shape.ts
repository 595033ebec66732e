/**
 * A WHERE's shape: its text with the literals taken out (PostgreSQL's query fingerprint, through libpg-query), so
 * that a warning about a statement is given once per shape, not once per text. ORMs that inline literals
 * (Sequelize) send a new text for every value; all of them are one shape. libpg-query is loaded by the time a
 * statement is planned (rewrite.ts); a WHERE that does not parse alone is its own shape.
 */
import { fingerprintSync } from 'libpg-query';

export function whereShape(where: string): string {
  try {
    return fingerprintSync(`SELECT WHERE ${where}`);
  } catch {
    return where;
  }
}
