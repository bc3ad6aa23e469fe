/**
 * What an engineer can import from paperlink/workflows/*: every value each entry point of
 * package.json exports is named in docs/temporal.md's table of them, under that entry point, so a
 * helper added to a module cannot be left out of the docs (some were).
 */
import fs from 'node:fs';
import path from 'node:path';
import { root } from '../support/fixtures';

const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as {
  exports: Record<string, unknown>;
};
const entryPoints = Object.keys(pkg.exports)
  .filter((k) => k.startsWith('./workflows/'))
  .map((k) => k.slice(2));

/** The names each entry point's rows of the table give (in backticks, before a `(` or the closing backtick). */
function documented(): Map<string, Set<string>> {
  const doc = fs.readFileSync(path.join(root, 'docs/temporal.md'), 'utf8');
  const section = /### What the package exports for Temporal\n([\s\S]*?)\n#{2,3} /.exec(doc)?.[1] ?? '';
  const names = new Map<string, Set<string>>();
  let entry = '';
  for (const row of section.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| entry point'))) {
    // cells between unescaped pipes
    const [first, exported] = row.slice(1, -1).split(/(?<!\\)\|/);
    if (first.trim()) entry = /`paperlink\/(.+?)`/.exec(first)?.[1] ?? first;
    const set = names.get(entry) ?? new Set<string>();
    for (const m of exported.matchAll(/`([A-Za-z_$][\w$]*)[(`]/g)) set.add(m[1]);
    names.set(entry, set);
  }
  return names;
}

describe('paperlink/workflows/* exports', () => {
  it('are the six entry points the docs list', () => {
    expect([...documented().keys()].sort()).toEqual([...entryPoints].sort());
  });

  it.each(entryPoints)('every value %s exports is in docs/temporal.md under it', (entry) => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const mod = require(path.join(root, entry)) as Record<string, unknown>;
    const values = Object.keys(mod).filter((k) => k !== '__esModule');
    expect(values.length).toBeGreaterThan(0);
    const named = documented().get(entry) ?? new Set();
    expect(values.filter((v) => !named.has(v))).toEqual([]);
  });
});
