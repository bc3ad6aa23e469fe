/**
 * `npm start` (scripts/start.js) starts the built service without building it again, and builds
 * first only when nothing is built or a source changed since the last build.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { root } from '../support/fixtures';
import { tempDir } from '../support/tmp';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- the CommonJS script npm start runs
const { stale } = require('../../scripts/start.js') as { stale: (dir: string) => string | undefined };

describe('stale()', () => {
  const dir = tempDir('paperlink-start-');
  const at = (file: string, seconds: number) => {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    if (!fs.existsSync(file)) fs.writeFileSync(file, '');
    fs.utimesSync(file, seconds, seconds);
  };

  it('says a tree that was never built must be, one built after its last change need not, and one changed since must', () => {
    at(path.join(dir, 'src/a.ts'), 1_000);
    at(path.join(dir, 'src/deep/b.ts'), 1_000);
    at(path.join(dir, 'workflows/w.ts'), 1_000);
    at(path.join(dir, 'tsconfig.json'), 1_000);
    for (const d of ['src', 'src/deep', 'workflows']) fs.utimesSync(path.join(dir, d), 1_000, 1_000);
    expect(stale(dir)).toMatch(/nothing is built/);
    at(path.join(dir, 'dist/.built'), 2_000);
    expect(stale(dir)).toBeUndefined();
    at(path.join(dir, 'src/deep/b.ts'), 3_000);
    expect(stale(dir)).toMatch(/^src changed/);
    at(path.join(dir, 'dist/.built'), 4_000);
    at(path.join(dir, 'tsconfig.json'), 5_000);
    expect(stale(dir)).toMatch(/^tsconfig\.json changed/);
  });
});

describe('npm start on a built tree', () => {
  const dataDir = tempDir('paperlink-start-data-');

  it('starts the server without building, and stops it on SIGTERM', async () => {
    const why = stale(root);
    if (why) throw new Error(`this tree must be built first (npm run build): ${why}`);
    const stamp = fs.statSync(path.join(root, 'dist/.built')).mtimeMs;
    const child = spawn(
      process.execPath,
      [path.join(root, 'scripts/start.js'), '--port', '0', '--processes', '1', '--data-dir', dataDir],
      { env: { ...process.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', () => /openapi\.json/.test(out) && resolve());
      void exited.then((code) => reject(new Error(`npm start exited (${code}):\n${out}`)));
    });
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out).not.toContain('Building');
    expect(fs.statSync(path.join(root, 'dist/.built')).mtimeMs).toBe(stamp);
  });
});
