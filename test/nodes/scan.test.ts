/**
 * n8n's own analysis of a community package (@n8n/scan-community-package, run offline by
 * scripts/n8n-scan.js, which `npm run lint` runs too): the package passes it on its source and its
 * packed tarball, and a copy with a rule broken fails it, so the check can fail.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { root } from '../support/fixtures';
import { tempDir } from '../support/tmp';

const scan = (dir?: string) =>
  spawnSync(process.execPath, [path.join(root, 'scripts/n8n-scan.js'), ...(dir ? [dir] : [])], {
    encoding: 'utf8',
    timeout: 300_000,
    // as a person runs it, not with jest's module flags
    env: { ...process.env, NODE_OPTIONS: '' },
  });

describe("n8n's package scanner", () => {
  const dir = tempDir();
  it('passes the package on its source and its packed tarball', () => {
    const r = scan();
    expect({ status: r.status, out: r.status ? r.stdout + r.stderr : '' }).toEqual({ status: 0, out: '' });
    expect(r.stdout).toMatch(/^ok {3}n8n's scanner on the source$/m);
    expect(r.stdout).toMatch(/^ok {3}n8n's scanner on the packed tarball$/m);
  }, 300_000);

  it('fails a copy whose node breaks one of its rules (the operations out of order)', () => {
    const copy = path.join(dir, 'n8n-nodes-paperlink');
    fs.cpSync(path.join(root, 'packages/n8n-nodes-paperlink'), copy, { recursive: true, dereference: true });
    const file = path.join(copy, 'nodes/Paperlink/actions/document/index.ts');
    const source = fs.readFileSync(file, 'utf8');
    // Delete before Download: move it after List
    const del = "      { name: 'Delete', value: 'delete', action: 'Delete a document' },\n";
    expect(source).toContain(del);
    fs.writeFileSync(file, source.replace(del, '').replace(/(\{ name: 'List'[^\n]*\n)/, `$1${del}`));
    const r = scan(copy);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('node-param-options-type-unsorted-items');
  }, 300_000);
});
