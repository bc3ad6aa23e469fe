#!/usr/bin/env node
// Builds the n8n package (packages/n8n-nodes-paperlink) from nodes/ and credentials/: each node and
// credential becomes one self-contained CommonJS file (esbuild), so the package has no runtime
// dependencies and loads nothing of the service. Only n8n-workflow (a peer, provided by n8n) and
// Node's built-ins stay outside. Icons and codex files are copied beside the bundles; the README
// (docs/n8n.md, its links made absolute) and the LICENSE go beside package.json.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { builtinModules } = require('node:module');
const esbuild = require('esbuild');

const root = path.resolve(__dirname, '..');
const pkgDir = path.join(root, 'packages/n8n-nodes-paperlink');
const out = path.join(pkgDir, 'dist');
const manifest = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
const entries = [...manifest.n8n.nodes, ...manifest.n8n.credentials].map((file) =>
  file.replace(/^dist\//, '').replace(/\.js$/, ''),
);
/** Where docs/ is read on the web (the repository the package names). */
const DOCS = 'https://github.com/paperlink/n8n-nodes-paperlink/blob/main/docs/';
const allowed = new Set(['n8n-workflow', ...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);

async function main() {
  fs.rmSync(out, { recursive: true, force: true });
  const result = await esbuild.build({
    entryPoints: Object.fromEntries(entries.map((e) => [e, path.join(root, `${e}.ts`)])),
    outdir: out,
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: 'node20',
    external: ['n8n-workflow'],
    metafile: true,
    logLevel: 'warning',
    legalComments: 'none',
  });
  // what the bundles still require at run time must be n8n-workflow or a Node built-in
  const outside = new Set();
  for (const output of Object.values(result.metafile.outputs))
    for (const i of output.imports) if (i.external && !allowed.has(i.path)) outside.add(i.path);
  if (outside.size)
    throw new Error(`the n8n bundles require packages n8n does not provide: ${[...outside].join(', ')}`);
  for (const dir of ['nodes', 'credentials']) {
    for (const file of fs.readdirSync(path.join(root, dir), { recursive: true })) {
      if (!/\.(svg|png)$|\.node\.json$/.test(file)) continue;
      fs.mkdirSync(path.dirname(path.join(out, dir, file)), { recursive: true });
      fs.copyFileSync(path.join(root, dir, file), path.join(out, dir, file));
    }
  }
  // npm shows the README away from the repository: its links to other docs become absolute
  const readme = fs
    .readFileSync(path.join(root, 'docs/n8n.md'), 'utf8')
    .replace(/\]\((?!https?:|#|mailto:)([^)\s]+)\)/g, (_, link) => `](${new URL(link, DOCS).href})`);
  fs.writeFileSync(path.join(pkgDir, 'README.md'), readme);
  fs.copyFileSync(path.join(root, 'LICENSE'), path.join(pkgDir, 'LICENSE'));
}

main().catch((err) => {
  console.error(`building the n8n package failed: ${err.message}`);
  process.exit(1);
});
