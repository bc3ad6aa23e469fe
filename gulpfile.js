// The build (`npm run build` runs `gulp build`), as n8n node packages have long been built:
//   service      the service, its CLI and library, compiled by tsc into dist/ (the bin executable)
//   editor       the web app's template editor (web/editor.mjs with CodeMirror) as one browser
//                module in dist/src/web/editor.js, shipped in the package and served as
//                /assets/editor.js; pdf.js stays outside (the service serves it)
//   n8nBundle    each n8n node and credential (nodes/, credentials/) as one self-contained
//                CommonJS file (esbuild) in packages/n8n-nodes-paperlink/dist: no runtime
//                dependencies, nothing of the service loaded; only n8n-workflow (a peer, provided
//                by n8n) and Node's built-ins stay outside, and a bundle needing anything else fails
//   n8nIcons     the icons and codex files (*.node.json) copied beside the bundles
//   n8nPackage   the package's README (docs/n8n.md, its links made absolute for npm) and LICENSE
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { builtinModules } = require('node:module');
const { spawnSync } = require('node:child_process');
const { dest, parallel, series, src } = require('gulp');

const root = __dirname;
const pkgDir = path.join(root, 'packages/n8n-nodes-paperlink');
const out = path.join(pkgDir, 'dist');
/** Where docs/ is read on the web (the repository the package names). */
const DOCS = 'https://github.com/paperlink/n8n-nodes-paperlink/blob/main/docs/';

async function compile() {
  const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.json'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (tsc.status !== 0) throw new Error('tsc failed: see above');
  // tsc writes 0644; npm makes a bin executable only when it links it, so a clean clone built at a
  // path npx has linked before (its cache keeps the link) would find the command not executable
  for (const bin of Object.values(JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).bin))
    fs.chmodSync(path.join(root, bin), 0o755);
}

/** When it was built, for `npm start` (scripts/start.js builds again only when a source is newer): after all of it is. */
async function stamp() {
  fs.writeFileSync(path.join(root, 'dist/.built'), `${new Date().toISOString()}\n`);
}

async function editor() {
  await require('esbuild').build({
    entryPoints: [path.join(root, 'web/editor.mjs')],
    outfile: path.join(root, 'dist/src/web/editor.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    minify: true,
    external: ['/assets/pdfjs/*'],
    logLevel: 'warning',
    legalComments: 'none',
  });
}

async function n8nBundle() {
  const esbuild = require('esbuild');
  const manifest = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
  const entries = [...manifest.n8n.nodes, ...manifest.n8n.credentials].map((file) =>
    file.replace(/^dist\//, '').replace(/\.js$/, ''),
  );
  const allowed = new Set(['n8n-workflow', ...builtinModules, ...builtinModules.map((m) => `node:${m}`)]);
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
}

function n8nIcons() {
  return src(['{nodes,credentials}/**/*.{svg,png}', 'nodes/**/*.node.json'], {
    cwd: root,
    base: root,
    encoding: false,
  }).pipe(dest(out));
}

async function n8nPackage() {
  const readme = fs
    .readFileSync(path.join(root, 'docs/n8n.md'), 'utf8')
    .replace(/\]\((?!https?:|#|mailto:)([^)\s]+)\)/g, (_, link) => `](${new URL(link, DOCS).href})`);
  fs.writeFileSync(path.join(pkgDir, 'README.md'), readme);
  fs.copyFileSync(path.join(root, 'LICENSE'), path.join(pkgDir, 'LICENSE'));
}

const n8n = series(n8nBundle, parallel(n8nIcons, n8nPackage));
// the service with its web app's editor: what `npm start` builds
const service = series(compile, editor, stamp);
exports.service = service;
exports.n8n = n8n;
exports.build = series(service, n8n);
exports.default = exports.build;
