#!/usr/bin/env bash
# `npm run test:node -- 24` (or 22): this commit on another Node.js major, as a user who has it
# installs it — a clean install from the committed tree with that Node (native modules built
# against it: better-sqlite3, the Temporal core bridge, @swc/core), then the suites that cover every
# native and version-sensitive part: SQLite and PostgreSQL, generate and render on the render
# threads, Magic Link e-mail and the recipient's walk in Chromium, postcard intake, the Temporal
# bundle and replay, the CLI. Node comes from scripts/node.sh (cached). The compiled JavaScript
# (dist/) is the same on every Node: it is built once, in this tree, and copied (commit first: the
# tree installed is the committed one), and the tests are type-checked once, by `npm test`.
# Ends with its own "N passed, N failed" line.
#
# CI prepares both lines while other checks run, then tests them:
#   bash scripts/test-node.sh prepare 24 DIR   the clean install into DIR
#   bash scripts/test-node.sh run 24 DIR       the suites, in DIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

use_node() {
  NODE="$(bash "$root/scripts/node.sh" "$1")"
  export PATH="$NODE/bin:$PATH"
  export npm_config_nodedir="$NODE"
}

prepare() {
  local work="$2"
  use_node "$1"
  mkdir -p "$work"
  git -C "$root" archive HEAD | tar -x -C "$work"
  # CI has built already (and may be building nothing else at this moment: it sets PAPERLINK_BUILT)
  [ "${PAPERLINK_BUILT:-}" = 1 ] || (cd "$root" && npm run build --silent)
  cp -R "$root/dist" "$work/dist"
  echo "== node $(node --version): npm install (native modules built for it)"
  if ! (cd "$work" && npm install --no-audit --no-fund > "$work/install.log" 2>&1); then
    tail -40 "$work/install.log"
    return 1
  fi
  # the native builds, kept for the next clean install on this Node (scripts/prebuilt.js)
  node "$root/scripts/prebuilt.js" "$work"
}

run() {
  use_node "$1"
  cd "$2"
  echo "== node $(node --version): the suites"
  PAPERLINK_SKIP_TYPECHECK=1 node scripts/test.js \
    test/db test/api/generate.test.ts test/api/resources.test.ts test/templates/pool.test.ts \
    test/links/api.test.ts test/e2e/magic-link.test.ts test/postcards/api.test.ts \
    test/workflows/bundle.test.ts test/workflows/replay.test.ts test/cli/service.test.ts
}

case "${1:-24}" in
  prepare) prepare "$2" "$3" ;;
  run) run "$2" "$3" ;;
  *)
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    prepare "${1:-24}" "$work"
    (run "${1:-24}" "$work")
    ;;
esac
