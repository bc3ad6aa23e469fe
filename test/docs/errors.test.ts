/**
 * The catalogue of error codes (src/errors.ts, ERROR_CODES) and docs/api.md's table of errors say
 * the same: every code the API answers is documented under the status it is answered with, and the
 * table names no code the code cannot answer. (The compiler already refuses a thrown code that is
 * not in the catalogue: each error class takes only its own status's codes.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { ERROR_CODES } from '../../src/errors';
import { root } from '../support/fixtures';

/** `status code` pairs of docs/api.md's "## Errors" table. */
function documented(): string[] {
  const text = fs.readFileSync(path.join(root, 'docs/api.md'), 'utf8');
  const start = text.indexOf('## Errors');
  const section = text.slice(start, text.indexOf('\n## ', start + 1));
  const pairs: string[] = [];
  for (const row of section.matchAll(/^\| (\d{3}) \| ([^|]+) \|/gm))
    for (const code of row[2].matchAll(/`([a-z_]+)`/g)) pairs.push(`${row[1]} ${code[1]}`);
  return pairs.sort();
}

it("docs/api.md's table of errors is the catalogue of codes, status by status", () => {
  const catalogue = Object.entries(ERROR_CODES)
    .flatMap(([status, codes]) => codes.map((code) => `${status} ${code}`))
    .sort();
  expect(catalogue.length).toBeGreaterThan(30);
  expect(documented()).toEqual(catalogue);
});
