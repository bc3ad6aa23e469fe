#!/usr/bin/env node
// n8n's own check of a community package, run here before publishing: the analysis of
// @n8n/scan-community-package (its `analyzePackage`: @n8n/eslint-plugin-community-nodes'
// recommended rules plus eslint-plugin-n8n-nodes-base's community, credentials and nodes rule
// sets, inline eslint-disable comments ignored), on the source as n8n finds it after publishing
// (the folder whose package.json names n8n-nodes-paperlink: packages/n8n-nodes-paperlink, whose
// nodes/ and credentials/ are the repository's) and on the packed tarball, offline.
//
// The scanner is installed once into ~/.cache (npm --ignore-scripts: eslint-plugin-n8n-nodes-base
// has a preinstall script that insists on pnpm), not as a dev dependency of the project.
//
// Usage: node scripts/n8n-scan.js [package folder]   (default packages/n8n-nodes-paperlink)
// Exits 1 with the scanner's report when it finds a violation.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { pathToFileURL } = require('node:url');

const VERSION = process.env.N8N_SCAN_VERSION || '0.32.0';
// under NODE_ENV=test (jest sets it) eslint-plugin-n8n-nodes-base reads file names as its own tests
// name them, and finds every node file misnamed
if (process.env.NODE_ENV === 'test') delete process.env.NODE_ENV;
const root = path.resolve(__dirname, '..');
const cache = path.join(os.homedir(), '.cache', 'paperlink-n8n-scan', VERSION);
const scanner = path.join(cache, 'node_modules', '@n8n', 'scan-community-package', 'scanner', 'scanner.mjs');

function install() {
  if (fs.existsSync(path.join(cache, '.complete'))) return;
  fs.rmSync(cache, { recursive: true, force: true });
  fs.mkdirSync(cache, { recursive: true });
  fs.writeFileSync(path.join(cache, 'package.json'), JSON.stringify({ name: 'n8n-scan', private: true }));
  console.log(`installing @n8n/scan-community-package ${VERSION} into ${cache} (once)`);
  const r = spawnSync(
    'npm',
    ['install', '--ignore-scripts', '--no-audit', '--no-fund', `@n8n/scan-community-package@${VERSION}`],
    { cwd: cache, encoding: 'utf8' },
  );
  if (r.status !== 0) throw new Error(`npm install of the scanner failed:\n${r.stderr}`);
  fs.writeFileSync(path.join(cache, '.complete'), '');
}

async function main() {
  const pkgDir = path.resolve(process.argv[2] || path.join(root, 'packages/n8n-nodes-paperlink'));
  install();
  const { analyzePackage, SOURCE_FILE_PATTERNS } = await import(pathToFileURL(scanner).href);
  let failed = false;
  const report = (what, r) => {
    console.log(`${r.passed ? 'ok  ' : 'FAIL'} n8n's scanner on the ${what}${r.passed ? '' : `: ${r.message}`}`);
    if (!r.passed) {
      failed = true;
      if (r.details) console.log(r.details);
    }
  };
  report('source', await analyzePackage(pkgDir, SOURCE_FILE_PATTERNS));

  // the tarball as npm publishes it, unpacked as the scanner unpacks it
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'paperlink-n8n-scan-'));
  try {
    const packed = spawnSync('npm', ['pack', '--json', '--pack-destination', work], { cwd: pkgDir, encoding: 'utf8' });
    if (packed.status !== 0) throw new Error(`npm pack failed:\n${packed.stderr}`);
    const tarball = path.join(work, JSON.parse(packed.stdout)[0].filename);
    const untar = spawnSync('tar', ['-xzf', tarball, '-C', work], { encoding: 'utf8' });
    if (untar.status !== 0) throw new Error(`tar failed: ${untar.stderr}`);
    report('packed tarball', await analyzePackage(path.join(work, 'package'), ['**/*.js', 'package.json']));
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  if (failed) process.exit(1);
}

main().catch((err) => {
  console.error(`n8n-scan: ${err.message}`);
  process.exit(1);
});
