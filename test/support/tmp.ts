import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A fresh temporary folder, removed after the test file. */
export function tempDir(prefix = 'paperlink-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}
