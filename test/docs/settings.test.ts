/**
 * docs/deploy.md's table of every setting and the processes that need it cannot drift from the
 * code: every environment variable src/config.ts reads (and every one read elsewhere in src/ and
 * workflows/) is a row of it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RATE_LIMIT_SETTINGS } from '../../src/config';
import { root } from '../support/fixtures';

const read = (file: string) => fs.readFileSync(path.join(root, file), 'utf8');
const sources = (dir: string): string[] =>
  fs
    .readdirSync(path.join(root, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(dir, f));

/** The settings the code reads. */
function settingsRead(): Set<string> {
  const names = new Set<string>(Object.values(RATE_LIMIT_SETTINGS));
  const config = read('src/config.ts');
  // env.NAME, and the names config.ts hands its readers ('RENDER_TIMEOUT_MS', …)
  for (const m of config.matchAll(/\benv\.([A-Z][A-Z0-9_]+)|'([A-Z][A-Z0-9_]{2,})'/g)) names.add(m[1] ?? m[2]);
  for (const file of [...sources('src'), ...sources('workflows')])
    for (const m of read(file).matchAll(/process\.env\.([A-Z][A-Z0-9_]+)/g)) names.add(m[1]);
  return names;
}

/** The settings named in the first column of docs/deploy.md's table. */
function settingsDocumented(): Set<string> {
  const doc = read('docs/deploy.md');
  const section = /## Every setting, and who needs it\n([\s\S]*?)(\n## |$)/.exec(doc)?.[1] ?? '';
  const names = new Set<string>();
  for (const row of section.split('\n').filter((l) => l.startsWith('| `')))
    for (const m of row.split(' | ')[0].matchAll(/`([A-Z][A-Z0-9_]+)`/g)) names.add(m[1]);
  return names;
}

describe("docs/deploy.md's table of settings", () => {
  it('names every setting the code reads', () => {
    const read = settingsRead();
    // the scan finds them: a change to how config.ts reads settings must not empty this test
    expect(read.size).toBeGreaterThan(50);
    expect(read).toContain('WEBHOOK_TIMEOUT_MS');
    const documented = settingsDocumented();
    expect([...read].filter((n) => !documented.has(n)).sort()).toEqual([]);
  });

  it('says for each whether serve, the worker or both need it', () => {
    const doc = read('docs/deploy.md');
    const section = /## Every setting, and who needs it\n([\s\S]*?)(\n## |$)/.exec(doc)![1];
    for (const row of section.split('\n').filter((l) => l.startsWith('| `'))) {
      const [, serve, worker] = row.split(' | ');
      expect([serve, worker].map((c) => c.replace(/\*/g, ''))).toEqual([
        expect.stringMatching(/^(yes|no)$/),
        expect.stringMatching(/^(yes|no)$/),
      ]);
    }
  });
});
