#!/usr/bin/env bash
# `npm run test:node -- 24` (or 22): this commit on another Node.js major, as a user who has it
# installs it — a clean install from the committed tree with that Node (native modules built
# against it: better-sqlite3, the Temporal core bridge, @swc/core), then the suites that cover every
# native and version-sensitive part: SQLite and PostgreSQL, generate and render on the render
# threads, Magic Link e-mail and the recipient's walk in Chromium, postcard intake, the Temporal
# bundle and replay, the CLI. Node comes from scripts/node.sh (cached). The compiled JavaScript
# (dist/) is the same on every Node: it is built once, in this tree, and copied, and the tests are
# type-checked once by `npm test`. Ends with its own "N passed, N failed" line.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
NODE="$(bash "$root/scripts/node.sh" "${1:-24}")"
export PATH="$NODE/bin:$PATH"
export npm_config_nodedir="$NODE"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git -C "$root" archive HEAD | tar -x -C "$work"
(cd "$root" && npm run build --silent)
cp -R "$root/dist" "$work/dist"
cd "$work"
echo "== node $(node --version): npm install (native modules built for it)"
if ! npm install --no-audit --no-fund > "$work/install.log" 2>&1; then
  tail -40 "$work/install.log"
  exit 1
fi
PAPERLINK_SKIP_TYPECHECK=1 node scripts/test.js \
  test/db test/api/generate.test.ts test/api/resources.test.ts test/templates/pool.test.ts \
  test/links/api.test.ts test/e2e/magic-link.test.ts test/postcards/api.test.ts \
  test/workflows/bundle.test.ts test/workflows/replay.test.ts test/cli/service.test.ts
