/**
 * `npm run bench -- NAME`: a name it does not know is refused before anything runs (it once ran
 * nothing and exited 0, so `npm run bench -- held` looked like a run that measured nothing), and
 * every name its help lists is a bench it runs. No bench is run here.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { root } from '../support/fixtures';

const runJs = path.join(root, 'bench/run.js');
const bench = (...args: string[]) =>
  spawnSync(process.execPath, [runJs, ...args], { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { SUITES } = require(runJs) as { SUITES: { name: string; file: string; byName?: boolean }[] };

describe('bench/run.js', () => {
  it('refuses an unknown name with exit 2 before running any bench, even beside known ones', () => {
    for (const args of [['no-such-bench'], ['render', 'no-such-bench']]) {
      const r = bench(...args);
      expect(r.status).toBe(2);
      // no bench started (each says its name on stderr as it starts) and no report was written
      expect(r.stdout).toBe('');
      for (const s of SUITES) expect(r.stderr).not.toContain(`${s.name}…`);
    }
  });

  it('lists in its help every bench it runs by name, each a module with run()', () => {
    const r = bench('--help');
    expect(r.status).toBe(0);
    const listed = r.stdout
      .split('\n')
      .map((l) => /^ {2}(\S+) {2,}/.exec(l)?.[1])
      .filter((n): n is string => n !== undefined);
    expect(listed).toEqual(SUITES.map((s) => s.name));
    expect(listed).toEqual(expect.arrayContaining(['held', 'faults']));
    for (const s of SUITES) {
      const file = path.join(root, 'bench', `${s.file}.js`);
      // the module's run() exported, read from its source: loading it would start nothing, but needs the build
      expect(fs.readFileSync(file, 'utf8')).toMatch(/module\.exports = \{[^}]*\brun\b/);
    }
  });
});
