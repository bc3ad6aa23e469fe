'use strict';
/**
 * `node scripts/prebuilt.js [DIR]`: keeps the native modules this Node built from source in DIR's
 * node_modules (better-sqlite3: its prebuilt binaries are on GitHub, which this machine cannot
 * reach, so each clean install compiles SQLite for about a minute) where prebuild-install looks
 * before it downloads: npm's cache, `_prebuilds/`, under the name of the download it would make
 * (package, version, Node ABI, platform). The next install of the same version on the same Node
 * unpacks it in a second. Run it with the Node that built them; it never replaces a kept build.
 */
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const dir = path.resolve(process.argv[2] ?? '.');
const modules = path.join(dir, 'node_modules');

for (const name of fs.readdirSync(modules)) {
  const mod = path.join(modules, name);
  const file = path.join(mod, 'package.json');
  if (!fs.existsSync(file)) continue;
  const pkg = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (!/prebuild-install/.test(pkg.scripts?.install ?? '')) continue;
  const release = path.join(mod, 'build', 'Release');
  // the addons only: prebuild-install loads what it unpacks to check it (better-sqlite3 also builds
  // an SQLite extension, test_extension.node, that is no addon and that its own downloads leave out)
  const built = (fs.existsSync(release) ? fs.readdirSync(release) : []).filter((f) => {
    if (!f.endsWith('.node')) return false;
    try {
      require(path.join(release, f));
      return true;
    } catch {
      return false;
    }
  });
  if (!built.length) continue;
  // the name prebuild-install gives the download, and where it keeps one (its own code decides)
  const tool = path.dirname(require.resolve('prebuild-install/package.json', { paths: [mod] }));
  const opts = require(path.join(tool, 'rc.js'))(pkg);
  const util = require(path.join(tool, 'util.js'));
  const kept = util.cachedPrebuild(util.getDownloadUrl({ ...opts, pkg }));
  if (fs.existsSync(kept)) continue;
  fs.mkdirSync(path.dirname(kept), { recursive: true });
  const temp = `${kept}.${process.pid}.tmp`;
  const tar = spawnSync('tar', ['-czf', temp, '-C', mod, ...built.map((f) => `build/Release/${f}`)], {
    encoding: 'utf8',
  });
  if (tar.status !== 0) throw new Error(`tar failed: ${tar.stderr}`);
  fs.renameSync(temp, kept);
  console.log(`kept ${name} ${pkg.version} (Node ABI ${opts.abi}) for the next install: ${kept}`);
}
